#include "store/cache_simulation.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>
#include <vector>

namespace stormo {
namespace {

size_t key(int layer, int expert, int n_experts) {
    return static_cast<size_t>(layer) * static_cast<size_t>(n_experts) + static_cast<size_t>(expert);
}

// The slots and which (layer, expert) each holds, with the store's per-slot standing.
class SlotPool {
public:
    struct Slot {
        int layer = -1;
        int expert = -1;
        bool on_probation = false;
        bool prefetched_unused = false;
    };
    SlotPool(size_t slots, int n_layers, int n_experts)
        : n_experts_(n_experts), slots_(slots), where_(static_cast<size_t>(n_layers) * static_cast<size_t>(n_experts), kNone) {
        for (size_t s = slots; s > 0; --s) empty_.push_back(s - 1);
    }
    size_t size() const { return slots_.size(); }
    Slot& at(size_t s) { return slots_[s]; }
    // The slot holding (layer, expert), or kNone.
    size_t find(int layer, int expert) const { return where_[key(layer, expert, n_experts_)]; }
    std::optional<size_t> take_empty() {
        if (empty_.empty()) return std::nullopt;
        const size_t s = empty_.back();
        empty_.pop_back();
        return s;
    }
    void place(size_t s, int layer, int expert, bool on_probation) {
        Slot& slot = slots_[s];
        if (slot.layer >= 0) where_[key(slot.layer, slot.expert, n_experts_)] = kNone;
        slot = Slot{layer, expert, on_probation, false};
        where_[key(layer, expert, n_experts_)] = s;
    }
    static constexpr size_t kNone = std::numeric_limits<size_t>::max();

private:
    int n_experts_;
    std::vector<Slot> slots_;
    std::vector<size_t> where_;
    std::vector<size_t> empty_;
};

// The place VictimChoice picks among the slots not pinned (and, for a prefetch, not holding
// another unused prefetch), as the streaming store's take_victim does.
std::optional<VictimChoice::Placement> choose_place(SlotPool& pool, const Eviction& eviction, const std::vector<char>& pinned,
                                                    int layer, int expert, bool read_ahead) {
    if (auto empty = pool.take_empty()) return VictimChoice::Placement{*empty, false};
    VictimChoice choice(eviction);
    for (size_t s = 0; s < pool.size(); ++s) {
        const SlotPool::Slot& slot = pool.at(s);
        if (pinned[s] || (read_ahead && slot.prefetched_unused)) continue;
        choice.offer(s, slot.layer, slot.expert, slot.on_probation);
    }
    return choice.choose(layer, expert, read_ahead);
}

}  // namespace

CacheSimulation simulate_cache(std::span<const RouteStep> trace, size_t slots, const EvictionSettings& settings,
                               int n_layers, int n_experts, bool prefetch) {
    auto eviction = make_eviction(settings, n_layers, n_experts);
    SlotPool pool(slots, n_layers, n_experts);
    std::vector<char> pinned(slots, 0);
    std::vector<size_t> pinned_now;
    CacheSimulation sim;
    for (size_t t = 0; t < trace.size(); ++t) {
        const RouteStep& step = trace[t];
        eviction->on_layer_step(step.layer);
        for (int32_t e : step.experts) {
            const size_t found = pool.find(step.layer, e);
            if (found != SlotPool::kNone) {
                ++sim.hits;
                SlotPool::Slot& slot = pool.at(found);
                slot.on_probation = false;  // used again: it earned its place
                if (slot.prefetched_unused) {
                    slot.prefetched_unused = false;
                    ++sim.prefetch_used;
                }
                pinned[found] = 1;
                pinned_now.push_back(found);
            } else {
                ++sim.misses;
                // None: more experts than slots in one step, this one is not cached.
                if (auto place = choose_place(pool, *eviction, pinned, step.layer, e, false)) {
                    pool.place(place->slot, step.layer, e, place->on_probation);
                    pinned[place->slot] = 1;
                    pinned_now.push_back(place->slot);
                }
            }
            eviction->on_use(step.layer, e);
        }
        // The store predicts the next MoE layer's experts while this step's are still pinned.
        if (prefetch && t + 1 < trace.size()) {
            const RouteStep& next = trace[t + 1];
            const size_t limit = slots > step.experts.size() ? slots - step.experts.size() : 0;
            size_t issued = 0;
            for (int32_t e : next.predicted) {
                if (issued >= limit) break;
                if (pool.find(next.layer, e) != SlotPool::kNone) continue;
                auto place = choose_place(pool, *eviction, pinned, next.layer, e, true);
                if (!place) continue;
                pool.place(place->slot, next.layer, e, place->on_probation);
                pool.at(place->slot).prefetched_unused = true;
                ++sim.prefetch_issued;
                ++issued;
            }
        }
        for (size_t s : pinned_now) pinned[s] = 0;
        pinned_now.clear();
    }
    return sim;
}

CacheSimulation simulate_belady(std::span<const RouteStep> trace, size_t slots, int n_layers, int n_experts) {
    // next_use[t][i]: the step that next asks for step t's i-th expert (trace.size(): never).
    const size_t never = trace.size();
    std::vector<std::vector<size_t>> next_use(trace.size());
    {
        std::vector<size_t> upcoming(static_cast<size_t>(n_layers) * static_cast<size_t>(n_experts), never);
        for (size_t t = trace.size(); t-- > 0;) {
            const RouteStep& step = trace[t];
            next_use[t].resize(step.experts.size());
            for (size_t i = 0; i < step.experts.size(); ++i) {
                size_t& u = upcoming[key(step.layer, step.experts[i], n_experts)];
                next_use[t][i] = u;
                u = t;
            }
        }
    }
    // The cached experts not pinned by the current step, farthest next use last.
    std::set<std::pair<size_t, size_t>> evictable;  // (next use, key)
    std::vector<size_t> cached_next(static_cast<size_t>(n_layers) * static_cast<size_t>(n_experts), 0);
    std::vector<char> cached(cached_next.size(), 0);
    size_t used = 0;
    CacheSimulation sim;
    std::vector<std::pair<size_t, size_t>> pinned;  // (key, next use) of this step's cached experts
    for (size_t t = 0; t < trace.size(); ++t) {
        const RouteStep& step = trace[t];
        pinned.clear();
        for (size_t i = 0; i < step.experts.size(); ++i) {
            const size_t k = key(step.layer, step.experts[i], n_experts);
            if (cached[k]) {
                ++sim.hits;
                evictable.erase({cached_next[k], k});
                pinned.emplace_back(k, next_use[t][i]);
                continue;
            }
            ++sim.misses;
            if (used < slots) {
                ++used;
            } else if (!evictable.empty()) {
                const auto victim = std::prev(evictable.end());
                cached[victim->second] = 0;
                evictable.erase(victim);
            } else {
                continue;  // every slot pinned by this step: not cached, as in the store
            }
            cached[k] = 1;
            pinned.emplace_back(k, next_use[t][i]);
        }
        for (const auto& [k, next] : pinned) {
            cached_next[k] = next;
            evictable.insert({next, k});
        }
    }
    return sim;
}

PredictionAccuracy prediction_accuracy(std::span<const RouteStep> trace) {
    PredictionAccuracy a;
    for (const RouteStep& step : trace) {
        if (step.predicted.empty()) continue;
        ++a.steps;
        a.chosen += step.experts.size();
        a.predicted += step.predicted.size();
        for (int32_t e : step.experts)
            if (std::find(step.predicted.begin(), step.predicted.end(), e) != step.predicted.end()) ++a.correct;
    }
    return a;
}

}  // namespace stormo
