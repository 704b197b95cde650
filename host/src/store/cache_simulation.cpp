#include "store/cache_simulation.hpp"

#include "store/slot_model.hpp"

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

}  // namespace

CacheSimulation simulate_cache(std::span<const RouteStep> trace, size_t slots, const EvictionSettings& settings,
                               int n_layers, int n_experts, bool prefetch) {
    auto eviction = make_eviction(settings, slots, n_layers, n_experts);
    return simulate_cache(trace, slots, *eviction, n_layers, n_experts, prefetch);
}

CacheSimulation simulate_cache(std::span<const RouteStep> trace, size_t slots, Eviction& eviction, int n_layers,
                               int n_experts, bool prefetch) {
    SlotModel pool(slots, n_layers, n_experts);
    CacheSimulation sim;
    for (size_t t = 0; t < trace.size(); ++t) {
        const RouteStep& step = trace[t];
        eviction.on_layer_step(step.layer);
        for (int32_t e : step.experts) {
            switch (pool.request(step.layer, e, eviction)) {
                case SlotModel::Request::hit_read_ahead: ++sim.prefetch_used; [[fallthrough]];
                case SlotModel::Request::hit: ++sim.hits; break;
                case SlotModel::Request::miss: ++sim.misses; break;
            }
            eviction.on_use(step.layer, e);
        }
        // The store predicts the next MoE layer's experts while this step's are still pinned.
        if (prefetch && t + 1 < trace.size()) {
            const RouteStep& next = trace[t + 1];
            const size_t limit = slots > step.experts.size() ? slots - step.experts.size() : 0;
            size_t issued = 0;
            for (int32_t e : next.predicted) {
                if (issued >= limit) break;
                if (!pool.read_ahead(next.layer, e, eviction)) continue;
                ++sim.prefetch_issued;
                ++issued;
            }
        }
        pool.end_step();
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

namespace {

// Ranks by the chance of being drawn at its layer's next step (next_draw[t] of the layer's latest
// step t before the current one), lowest leaves first; equal chances: the layer that runs last
// leaves first, then the least recently used. Every newcomer is cached, as under Belady.
class InformedEviction final : public Eviction {
public:
    InformedEviction(std::span<const std::vector<float>> next_draw, int n_layers, int n_experts)
        : next_draw_(next_draw), n_layers_(std::max(n_layers, 1)), n_experts_(n_experts),
          latest_(static_cast<size_t>(n_layers_), kNone),
          last_use_(static_cast<size_t>(n_layers_) * static_cast<size_t>(n_experts), 0) {}

    void on_layer_step(int layer) override {
        if (step_ != kNone) latest_[static_cast<size_t>(current_)] = step_;  // the step before is over
        step_ = step_ == kNone ? 0 : step_ + 1;
        current_ = layer;
    }
    void on_use(int layer, int expert) override { last_use_[key(layer, expert, n_experts_)] = ++tick_; }
    bool colder(int la, int ea, int lb, int eb) const override {
        const float pa = odds(la, ea), pb = odds(lb, eb);
        if (pa != pb) return pa < pb;
        const int ga = layers_to_go(la, current_, n_layers_), gb = layers_to_go(lb, current_, n_layers_);
        if (ga != gb) return ga > gb;
        return last_use_[key(la, ea, n_experts_)] < last_use_[key(lb, eb, n_experts_)];
    }
    bool displaces(int, int, int, int) const override { return true; }

private:
    static constexpr size_t kNone = std::numeric_limits<size_t>::max();
    float odds(int layer, int expert) const {
        const size_t t = latest_[static_cast<size_t>(layer)];
        if (t == kNone) return 0.0f;
        const std::vector<float>& p = next_draw_[t];
        return static_cast<size_t>(expert) < p.size() ? p[static_cast<size_t>(expert)] : 0.0f;
    }

    std::span<const std::vector<float>> next_draw_;
    int n_layers_;
    int n_experts_;
    int current_ = 0;
    size_t step_ = kNone;
    uint64_t tick_ = 0;
    std::vector<size_t> latest_;
    std::vector<uint64_t> last_use_;
};

}  // namespace

CacheSimulation simulate_informed(std::span<const RouteStep> trace, std::span<const std::vector<float>> next_draw, size_t slots,
                                  int n_layers, int n_experts) {
    InformedEviction eviction(next_draw, n_layers, n_experts);
    return simulate_cache(trace, slots, eviction, n_layers, n_experts);
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
