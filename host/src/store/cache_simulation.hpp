#pragma once
// Route traces replayed through a model of the streaming store's slots, to compare eviction
// policies with each other and with the optimum (`stormo cache-sim`, docs/expert_store.md).
//
// The model is the store's: one pool of `slots` slots shared by every layer; a step's experts (the
// union a layer's block chose) are acquired together and stay pinned until the step ends, so none
// of them can evict another; a miss reads the expert into a slot (an expert is never used without
// being cached, unless the step alone has more experts than there are slots); timing is not
// modelled (a read in flight is as good as a slot that holds the expert).
#include <cstddef>
#include <cstdint>
#include <span>

#include "store/eviction.hpp"
#include "store/route_trace.hpp"

namespace stormo {

struct CacheSimulation {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t prefetch_issued = 0;  // experts read ahead on the trace's predictions
    uint64_t prefetch_used = 0;    // of those, acquired before being evicted
    double hit_rate() const { return hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0; }
    uint64_t reads() const { return misses + prefetch_issued; }
};

// Replays a trace through `slots` slots with the given policy, choosing places with the store's
// VictimChoice. With `prefetch`, each step's recorded prediction (RouteStep::predicted) is read
// ahead as the store does it: after the step before has pinned its experts, at most the slots it
// leaves unpinned, never evicting another unused prefetch, a guess taking only an empty place or
// one on probation. A prefetched expert acquired later is a hit.
CacheSimulation simulate_cache(std::span<const RouteStep> trace, size_t slots, const EvictionSettings& settings,
                               int n_layers, int n_experts, bool prefetch = false);

// The same replay with a policy of the caller's (told of each step and use as the store tells its own).
CacheSimulation simulate_cache(std::span<const RouteStep> trace, size_t slots, Eviction& eviction, int n_layers,
                               int n_experts, bool prefetch = false);

// An online policy that sees what generated the trace but not its future draws: on a miss, the
// cached expert least likely to be drawn at its layer's next step leaves (`next_draw[t]`, one per
// step of the trace: the chance that one draw of that layer's next step picks each expert, as
// generate_routes gives it for synthetic routes). No policy that learns from past routes alone can
// know more, so its hit rate estimates how close the online policies can come to Belady's.
CacheSimulation simulate_informed(std::span<const RouteStep> trace, std::span<const std::vector<float>> next_draw,
                                  size_t slots, int n_layers, int n_experts);

// Belady's optimal replacement for the same model: on a miss, the unpinned cached expert whose next
// request lies farthest in the future (never again: farthest of all) leaves. Under the model's
// rules (every miss is read into a slot, a step's experts pinned together) no policy without
// prefetch has more hits on the same trace and slots.
CacheSimulation simulate_belady(std::span<const RouteStep> trace, size_t slots, int n_layers, int n_experts);

// How well the recorded predictions named the experts the steps then chose, over the steps that
// carry a prediction.
struct PredictionAccuracy {
    uint64_t steps = 0;      // steps with a prediction
    uint64_t chosen = 0;     // experts those steps chose
    uint64_t predicted = 0;  // experts predicted for them
    uint64_t correct = 0;    // chosen experts that were predicted
    double recall() const { return chosen ? static_cast<double>(correct) / static_cast<double>(chosen) : 0.0; }
    double precision() const { return predicted ? static_cast<double>(correct) / static_cast<double>(predicted) : 0.0; }
};
PredictionAccuracy prediction_accuracy(std::span<const RouteStep> trace);

}  // namespace stormo
