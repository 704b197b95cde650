#pragma once
// The MoE routers of the families: a router matrix (and bias) gives each row one logit per
// expert; a selection rule turns the logits into top_k (expert, weight) pairs in the router's
// canonical order, the order the host reduces expert outputs in.
//   topk_then_softmax  GPT-OSS: top-k of the logits, softmax over those k only
//   softmax_then_topk  Qwen3: softmax over every expert, top-k, renormalised when asked
//   sigmoid_grouped    GLM / DeepSeek-V3 (noaux_tc): sigmoid scores; the correction bias is added
//                      only to choose (within the best topk_group of n_group groups, a group
//                      scored by the sum of its two best; the other groups' choice scores become
//                      0, as transformers masks them); the weights are the chosen plain sigmoids,
//                      renormalised when asked (sum + 1e-20), times the scaling factor, listed by
//                      descending weight (ties: lower expert id)
// Traced intermediates: router_logits, router_topk_idx, router_topk_weight.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/kernels.hpp"

namespace stormo::toolkit {

enum class RouterRule { topk_then_softmax, softmax_then_topk, sigmoid_grouped };

struct RouterSpec {
    RouterRule rule = RouterRule::topk_then_softmax;
    size_t top_k = 0;
    bool renormalize = false;          // softmax_then_topk, sigmoid_grouped
    size_t n_group = 1;                // sigmoid_grouped
    size_t topk_group = 1;             // sigmoid_grouped
    float scaling = 1.0f;              // sigmoid_grouped: routed_scaling_factor
};

struct RouterWeights {
    WeightView weight;               // [experts, hidden]
    std::vector<float> bias;         // [experts] added to the logits, or empty
    std::vector<float> correction;   // sigmoid_grouped: e_score_correction_bias [experts], or empty
};

// True when a should come before b in torch.topk's descending order: larger first, NaN above every
// number, equal values by ascending index (what torch's CPU topk returns for these sizes).
bool topk_before(const float* v, int32_t a, int32_t b);
// Indices of the k largest of v[0..n), in that order.
std::vector<int32_t> topk_indices(const float* v, size_t n, size_t k);

// The selection rules over one row of logits [n_experts]; write top_k ids and weights.
void select_topk_then_softmax(const float* logits, size_t n_experts, size_t k, SoftmaxFn softmax, int32_t* ids,
                              float* weights);
void select_softmax_then_topk(const float* logits, size_t n_experts, size_t k, bool renormalize, SoftmaxFn softmax,
                              int32_t* ids, float* weights);
void select_sigmoid_grouped(const float* logits, size_t n_experts, const RouterSpec& spec,
                            const std::vector<float>& correction, int32_t* ids, float* weights);

// The router of one layer over a block of rows.
Routing build_router(const Compute& c, int layer, const StepContext& ctx, const RouterWeights& w,
                     const RouterSpec& spec, const Rows& normed);

}  // namespace stormo::toolkit
