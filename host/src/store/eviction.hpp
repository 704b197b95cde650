#pragma once
// Which expert leaves a full store: LRU; hotness (a use count that decays with each step of the
// expert's layer, so experts a layer keeps choosing stay and bursts fade); or next-use (the expert
// whose next use is expected farthest away: the layers to go before its layer comes round again,
// plus the tokens its decayed use rate says it waits for, an estimate of what Belady's optimum
// knows); and whether a newly read expert takes a cached one's place for good or is held on
// probation, first to leave.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

// Named "lru", "hotness", "next-use" and "adaptive" in engine configurations and stats.
enum class EvictionPolicy { lru, hotness, next_use, adaptive };
STORMO_API const char* eviction_policy_name(EvictionPolicy p);

// Keys are (layer, expert); layer indexes 0..n_layers-1 of the layers that have experts.
class Eviction {
public:
    virtual ~Eviction() = default;
    // A layer's experts were requested once more: its clock advances (decays its experts' heat).
    virtual void on_layer_step(int layer) = 0;
    virtual void on_use(int layer, int expert) = 0;
    // True when (a) should be evicted before (b).
    virtual bool colder(int layer_a, int expert_a, int layer_b, int expert_b) const = 0;
    // True when a newly read expert (n), about to be used, should take the place of the cached
    // expert (c) for good; otherwise it is held on probation and leaves before any cached expert.
    virtual bool displaces(int layer_n, int expert_n, int layer_c, int expert_c) const = 0;
};

struct EvictionSettings {
    EvictionPolicy policy = EvictionPolicy::hotness;
    double decay = 0.95;  // hotness, next-use: heat multiplier per step of the expert's layer
    // hotness: a newly read expert displaces the coldest cached one only when its heat exceeds that
    // expert's by this share; negative: always (no probation). Why: when several sequences decode
    // at once, each step's union of experts is most of a layer and the cache a fraction of all
    // layers, so heats differ by noise alone and swapping on noise turns a third of the cache into
    // experts read, used once and evicted (docs/expert_store.md, "Probation").
    double margin = 0.25;
    // adaptive: the second candidate's decay (hotness at `decay` is the first). 0.6 follows the
    // calibrated synthetic routes' wandering working set as closely as layer-clock LRU does.
    double recency_decay = 0.6;
};

// Where a newly read expert goes, chosen among the unpinned cached experts offered: the place of the
// coldest cached one when it displaces it, else the place of the coldest one on probation (the
// newcomer is then on probation too), else the coldest cached one's (on probation); a guess only
// the coldest on probation's. The streaming store and the cache simulation choose with this one rule.
class VictimChoice {
public:
    // `read_ahead`: the newcomer is a prefetch, a guess; it takes only the place of one on
    // probation, never one a use earned (no place then: the guess is not read), so the cached
    // experts offered are not even ranked.
    explicit VictimChoice(const Eviction& eviction, bool read_ahead = false) : eviction_(eviction), read_ahead_(read_ahead) {}
    void offer(size_t slot, int layer, int expert, bool on_probation);
    struct Placement {
        size_t slot = 0;
        bool on_probation = false;  // the newcomer's standing in that slot
    };
    std::optional<Placement> choose(int layer, int expert) const;

private:
    struct Candidate {
        size_t slot;
        int layer;
        int expert;
    };
    const Eviction& eviction_;
    bool read_ahead_;
    std::optional<Candidate> coldest_cached_, coldest_on_probation_;
};

// A hotness margin as configurations and `cache-sim --margin` write it: "off" (kept as -1) or a
// share from 0 to 100; nullopt for anything else.
std::optional<double> hotness_margin_from_text(std::string_view text);

// "lru", "hotness", "next-use" or "adaptive"; nullopt for anything else.
std::optional<EvictionPolicy> eviction_policy_from_text(std::string_view text);

// Layer steps until `layer` runs again when `current` is running, layers visited in order once a
// token: 1 for the next layer, n_layers for the current one.
inline int layers_to_go(int layer, int current, int n_layers) {
    return ((layer - current - 1) % n_layers + n_layers) % n_layers + 1;
}

// `slots`: the store's slot count (the adaptive policy replays its pool in shadows).
std::unique_ptr<Eviction> make_eviction(const EvictionSettings& settings, size_t slots, int n_layers, int n_experts);

}  // namespace stormo
