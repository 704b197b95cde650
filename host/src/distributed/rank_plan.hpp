#pragma once
// What `inspect --ranks N` prints (docs/distributed.md): each rank's share of the routed experts
// under the even split, in experts and bytes, and the bytes a token moves between rank 0 and the
// others per step: its hidden row to each other rank that holds one of its experts, and one
// output row back per such expert.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "store/expert_store.hpp"

namespace stormo {

struct RankShare {
    uint64_t experts = 0;  // over every MoE layer
    uint64_t bytes = 0;
};

struct RankPlan {
    std::vector<RankShare> ranks;
    // Per token and step, over every MoE layer: the expected bytes when a token's top_k experts
    // are drawn uniformly, and the most they can be.
    double bytes_out_per_token = 0.0;   // rank 0 to the owners: hidden rows
    double bytes_back_per_token = 0.0;  // the owners to rank 0: expert output rows
    uint64_t max_bytes_out_per_token = 0;
    uint64_t max_bytes_back_per_token = 0;
};

// The layers' experts as the checkpoint holds them; rows of `hidden` floats; top_k per token.
RankPlan plan_ranks(const std::vector<ExpertLayerLayout>& layers, int ranks, int top_k, size_t hidden);

}  // namespace stormo
