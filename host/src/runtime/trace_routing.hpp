#pragma once
// Routes replayed from a route trace onto a model's MoE layers (`bench --routing`): the
// RouteOverride that makes the store see a trained model's locality on a random-weight model.
//
// How a trace maps onto the model, deterministically:
// - The trace is cut into passes: a pass starts at each step whose layer is not above the step
//   before's (one block's walk through the layers). Passes of blocks of more than one row (a version
//   2 trace's prefill blocks) are left out: they hold only the union of their rows' choices. Passes
//   that miss one of the trace's layers are left out too.
// - A row replays pass (start + position) modulo the passes, start a hash of its sequence's first
//   token (RouteRow): a sequence walks the passes in order, so its consecutive tokens keep the
//   trace's temporal locality, and other sequences walk from other places.
// - The model's i-th MoE layer replays the trace's (i mod T)-th layer, T the trace's distinct layers.
// - Expert ids: with k the model's top-k and t the trace's (the fewest experts a replayed step
//   chose), each trace expert e stands for the r = ceil(k / t) model experts e*r .. e*r+r-1 (modulo
//   the model's expert count); a row takes the first k distinct of them in the step's order, and if
//   fewer than k, the ids after the largest taken (cyclically) that it does not hold yet.
// - A step's recorded prediction maps the same way (every id, not cut to k) and is what the
//   prefetcher reads ahead for that layer; a trace without predictions prefetches nothing.
#include <cstdint>
#include <vector>

#include "runtime/route_override.hpp"
#include "stormo/error.hpp"
#include "store/route_trace.hpp"

namespace stormo {

struct RoutedModelShape {
    std::vector<int> moe_layers;  // the model's layers with experts, ascending
    int experts = 0;
    int top_k = 0;
};

class TraceRouting final : public RouteOverride {
public:
    // Fails when the trace holds no pass to replay.
    static Expected<TraceRouting> create(const std::vector<RouteStep>& trace, const RoutedModelShape& model);

    std::vector<int32_t> route(int layer, std::span<const RouteRow> rows, size_t k, int n_experts) override;
    std::vector<int32_t> predict(int layer) override;

    size_t passes() const { return passes_.size(); }
    bool has_predictions() const { return has_predictions_; }
    // Pass p's experts and prediction at the model's i-th MoE layer, mapped.
    const std::vector<int32_t>& experts_of(size_t pass, size_t moe_index) const { return passes_[pass][moe_index].experts; }
    const std::vector<int32_t>& prediction_of(size_t pass, size_t moe_index) const { return passes_[pass][moe_index].predicted; }

private:
    struct Mapped {
        std::vector<int32_t> experts;    // k ids
        std::vector<int32_t> predicted;  // the prediction's ids
    };
    TraceRouting(RoutedModelShape model, std::vector<std::vector<Mapped>> passes, bool has_predictions)
        : model_(std::move(model)), passes_(std::move(passes)), has_predictions_(has_predictions) {}
    int moe_index(int layer) const;

    RoutedModelShape model_;
    std::vector<std::vector<Mapped>> passes_;  // [pass][moe index]
    bool has_predictions_ = false;
    size_t pass_of(const RouteRow& row) const;
    std::vector<RouteRow> block_;  // the rows of the block being routed
};

// What `streams` sequences decoding together acquire (`cache-sim --streams`): every one-row pass of
// the trace becomes a token of each sequence, sequence i named i as RouteRow names a sequence, so
// each walks the passes from a place of its own as `bench --parallel --routing` routes it. A layer's
// step is the union of the sequences' experts, with `rows` = streams, and the union of their
// predictions. Ids stay the trace's (a shape of its own layers, experts and fewest experts a step).
// Fails when the trace holds no pass to replay or `streams` is outside 1..kMaxStreams.
inline constexpr size_t kMaxStreams = 4096;
Expected<std::vector<RouteStep>> batched_route_trace(const std::vector<RouteStep>& trace, size_t streams);

}  // namespace stormo
