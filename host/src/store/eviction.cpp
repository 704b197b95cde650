#include "store/eviction.hpp"

#include "store/adaptive_eviction.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace stormo {
namespace {

size_t key(int layer, int expert, int n_experts) {
    return static_cast<size_t>(layer) * static_cast<size_t>(n_experts) + static_cast<size_t>(expert);
}

// decay^n, from a table for the short gaps that ranking thousands of cached experts per miss asks
// for over and over (std::pow there dominated cache-sim's time), computed beyond it.
class DecayPowers {
public:
    explicit DecayPowers(double decay) : decay_(decay), table_(kTable) {
        for (uint64_t n = 0; n < kTable; ++n) table_[n] = std::pow(decay, static_cast<double>(n));  // the same bits as before
    }
    double operator()(uint64_t n) const { return n < kTable ? table_[n] : std::pow(decay_, static_cast<double>(n)); }

private:
    static constexpr uint64_t kTable = 4096;
    double decay_;
    std::vector<double> table_;
};

class LruEviction final : public Eviction {
public:
    LruEviction(int n_layers, int n_experts)
        : n_experts_(n_experts), last_use_(static_cast<size_t>(n_layers) * static_cast<size_t>(n_experts), 0) {}
    void on_layer_step(int) override {}
    void on_use(int layer, int expert) override { last_use_[key(layer, expert, n_experts_)] = ++tick_; }
    bool colder(int la, int ea, int lb, int eb) const override {
        return last_use_[key(la, ea, n_experts_)] < last_use_[key(lb, eb, n_experts_)];
    }
    bool displaces(int, int, int, int) const override { return true; }

private:
    int n_experts_;
    uint64_t tick_ = 0;
    std::vector<uint64_t> last_use_;
};

// Every expert's use count, decayed per step of its own layer (the hotness heat), and its last
// use on a global tick for ties: what the hotness and next-use policies both rank by.
class DecayedHeat {
public:
    DecayedHeat(double decay, int n_layers, int n_experts)
        : n_experts_(n_experts), clock_(static_cast<size_t>(n_layers), 0),
          entries_(static_cast<size_t>(n_layers) * static_cast<size_t>(n_experts)), powers_(decay) {}

    void step(int layer) { ++clock_[static_cast<size_t>(layer)]; }
    void use(int layer, int expert) {
        Entry& e = entries_[key(layer, expert, n_experts_)];
        e.heat = heat(layer, expert) + 1.0;
        e.at = clock_[static_cast<size_t>(layer)];
        e.last_use = ++tick_;
    }
    double heat(int layer, int expert) const {
        const Entry& e = entries_[key(layer, expert, n_experts_)];
        return e.heat * powers_(clock_[static_cast<size_t>(layer)] - e.at);
    }
    uint64_t last_use(int layer, int expert) const { return entries_[key(layer, expert, n_experts_)].last_use; }
    uint64_t steps(int layer) const { return clock_[static_cast<size_t>(layer)]; }
    double power(uint64_t n) const { return powers_(n); }

private:
    struct Entry {
        double heat = 0.0;
        uint64_t at = 0;        // the layer clock when heat was last updated
        uint64_t last_use = 0;  // global tick, for ties
    };
    int n_experts_;
    uint64_t tick_ = 0;
    std::vector<uint64_t> clock_;
    std::vector<Entry> entries_;
    DecayPowers powers_;
};

class HotnessEviction final : public Eviction {
public:
    HotnessEviction(double decay, double margin, int n_layers, int n_experts)
        : margin_(margin), heat_(decay, n_layers, n_experts) {}

    void on_layer_step(int layer) override { heat_.step(layer); }
    void on_use(int layer, int expert) override { heat_.use(layer, expert); }

    bool colder(int la, int ea, int lb, int eb) const override {
        const double ha = heat_.heat(la, ea), hb = heat_.heat(lb, eb);
        if (ha != hb) return ha < hb;
        return heat_.last_use(la, ea) < heat_.last_use(lb, eb);  // equal heat: least recently used leaves first
    }

    bool displaces(int ln, int en, int lc, int ec) const override {
        if (margin_ < 0.0) return true;
        const double newcomer = heat_.heat(ln, en) + 1.0;  // with the use it is read for
        return newcomer > heat_.heat(lc, ec) * (1.0 + margin_);
    }

private:
    double margin_;
    DecayedHeat heat_;
};

// The cached expert whose next use is expected farthest away leaves first. Layers are visited in
// order, one step each per token, so an expert of layer l waits `layers_to_go(l)` steps for its
// layer to come round, and then, if its layer chooses it with probability p per token, 1/p - 1
// more tokens on average: expected wait = layers_to_go + n_layers * (1/p - 1). p is the expert's
// decayed use count over the decayed count of its layer's steps (the hotness heat, normalised).
// Hotness alone ranks experts of the layer about to run like those of the layer that just ran;
// this ranks by when they are needed, which is what the optimum does with the future it knows.
class NextUseEviction final : public Eviction {
public:
    NextUseEviction(double decay, double margin, int n_layers, int n_experts)
        : decay_(decay), margin_(margin), n_layers_(std::max(n_layers, 1)), heat_(decay, n_layers, n_experts) {}

    void on_layer_step(int layer) override {
        heat_.step(layer);
        current_ = layer;
    }
    void on_use(int layer, int expert) override { heat_.use(layer, expert); }

    bool colder(int la, int ea, int lb, int eb) const override {
        const double wa = expected_wait(la, heat_.heat(la, ea)), wb = expected_wait(lb, heat_.heat(lb, eb));
        if (wa != wb) return wa > wb;
        return heat_.last_use(la, ea) < heat_.last_use(lb, eb);
    }

    bool displaces(int ln, int en, int lc, int ec) const override {
        if (margin_ < 0.0) return true;
        const double newcomer = expected_wait(ln, heat_.heat(ln, en) + 1.0);
        return newcomer * (1.0 + margin_) < expected_wait(lc, heat_.heat(lc, ec));
    }

private:
    double expected_wait(int layer, double heat) const {
        const auto steps = static_cast<double>(std::max<uint64_t>(heat_.steps(layer), 1));
        const double norm = decay_ >= 1.0 ? steps : (1.0 - heat_.power(static_cast<uint64_t>(steps))) / (1.0 - decay_);
        const double p = std::clamp(heat / norm, 0.0, 1.0);
        if (p <= 0.0) return std::numeric_limits<double>::infinity();
        return static_cast<double>(layers_to_go(layer, current_, n_layers_)) + static_cast<double>(n_layers_) * (1.0 / p - 1.0);
    }

    double decay_;
    double margin_;
    int n_layers_;
    int current_ = 0;
    DecayedHeat heat_;
};

}  // namespace

const char* eviction_policy_name(EvictionPolicy p) {
    switch (p) {
        case EvictionPolicy::lru: return "lru";
        case EvictionPolicy::hotness: return "hotness";
        case EvictionPolicy::next_use: return "next-use";
        case EvictionPolicy::adaptive: return "adaptive";
    }
    return "hotness";
}

std::optional<EvictionPolicy> eviction_policy_from_text(std::string_view text) {
    for (EvictionPolicy p : {EvictionPolicy::lru, EvictionPolicy::hotness, EvictionPolicy::next_use, EvictionPolicy::adaptive})
        if (text == eviction_policy_name(p)) return p;
    return std::nullopt;
}

std::unique_ptr<Eviction> make_eviction(const EvictionSettings& settings, size_t slots, int n_layers, int n_experts) {
    switch (settings.policy) {
        case EvictionPolicy::adaptive: return make_adaptive_eviction(settings, slots, n_layers, n_experts);
        case EvictionPolicy::lru: return std::make_unique<LruEviction>(n_layers, n_experts);
        case EvictionPolicy::next_use:
            return std::make_unique<NextUseEviction>(settings.decay, settings.margin, n_layers, n_experts);
        case EvictionPolicy::hotness: break;
    }
    return std::make_unique<HotnessEviction>(settings.decay, settings.margin, n_layers, n_experts);
}

std::optional<double> hotness_margin_from_text(std::string_view text) {
    if (text == "off") return -1.0;
    double m = 0.0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), m);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !(m >= 0.0 && m <= 100.0))
        return std::nullopt;
    return m;
}

void VictimChoice::offer(size_t slot, int layer, int expert, bool on_probation) {
    if (read_ahead_ && !on_probation) return;  // a guess never takes its place
    std::optional<Candidate>& coldest = on_probation ? coldest_on_probation_ : coldest_cached_;
    if (!coldest || eviction_.colder(layer, expert, coldest->layer, coldest->expert)) coldest = Candidate{slot, layer, expert};
}

std::optional<VictimChoice::Placement> VictimChoice::choose(int layer, int expert) const {
    // A guess takes no place a use earned (offer keeps none for it): where it displaced cached
    // experts, the store read a third more bytes a token under the cap for the same or less speed
    // (docs/expert_store.md, "Guesses take no earned place").
    if (coldest_cached_ && eviction_.displaces(layer, expert, coldest_cached_->layer, coldest_cached_->expert))
        return Placement{coldest_cached_->slot, false};
    if (coldest_on_probation_) return Placement{coldest_on_probation_->slot, true};
    if (coldest_cached_) return Placement{coldest_cached_->slot, true};
    return std::nullopt;
}

}  // namespace stormo
