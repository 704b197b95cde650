#pragma once
// A replacement for the router's choice of experts, for measuring the expert store with the
// locality trained models route with (random weights route uniformly): `bench --routing` only,
// never an answer. The model's router still runs (its cost stays in the step); its experts are
// replaced, with uniform weights, so the logits under an override mean nothing.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace stormo {

// The row a route is for: its sequence, named by the sequence's first token (the one token every
// step of a sequence can see, whatever its length; bench's random prompts rarely share one), and
// its position in it. An override routes a row by these alone, so the plain and the speculative
// run of one prompt, a sequence alone and in a batch, and a replay after a rewind see the same
// routes, and so compute the same tokens.
struct RouteRow {
    int32_t sequence = 0;
    int64_t position = 0;
};

class RouteOverride {
public:
    virtual ~RouteOverride() = default;
    // The experts of `rows` at MoE layer `layer`: k distinct ids below n_experts per row, row
    // after row. Called once per block and MoE layer, in layer order.
    virtual std::vector<int32_t> route(int layer, std::span<const RouteRow> rows, size_t k, int n_experts) = 0;
    // What the prefetcher reads ahead for MoE layer `layer`, the next after the one route() last
    // served, for the same rows: the override's own prediction (empty: nothing).
    virtual std::vector<int32_t> predict(int layer) = 0;
};

}  // namespace stormo
