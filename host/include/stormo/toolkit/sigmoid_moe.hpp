#pragma once
// The feed-forward half of a DeepSeek-style decoder layer, as DeepSeek-V3 and GLM-5 write it in
// transformers: the first layers a dense SwiGLU MLP ("mlp.{gate,up,down}_proj"); the others a
// routed MoE whose router is "mlp.gate" (weight and e_score_correction_bias, the sigmoid_grouped
// rule), whose n_shared_experts shared experts are one resident MLP of n_shared_experts times the
// expert width ("mlp.shared_experts.*", added to the routed sum by the host), and whose routed
// experts are three matrices each ("mlp.experts.{e}.*", streamed through the expert store).
#include <cstdint>
#include <string>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/fp8.hpp"
#include "stormo/toolkit/router.hpp"

namespace stormo::toolkit {

class TensorLoader;

// The sigmoid_grouped router of a family's parsed config with DeepseekV3Config's fields
// (top_k, norm_topk_prob, n_group, topk_group, routed_scaling_factor).
template <class Config>
RouterSpec sigmoid_router_spec(const Config& c) {
    RouterSpec spec;
    spec.rule = RouterRule::sigmoid_grouped;
    spec.top_k = static_cast<size_t>(c.top_k);
    spec.renormalize = c.norm_topk_prob;
    spec.n_group = static_cast<size_t>(c.n_group);
    spec.topk_group = static_cast<size_t>(c.topk_group);
    spec.scaling = static_cast<float>(c.routed_scaling_factor);
    return spec;
}

struct SigmoidMoeShape {
    int64_t hidden = 0;
    int64_t intermediate = 0;      // dense layers
    int64_t moe_intermediate = 0;  // one routed expert
    int64_t n_shared = 0;          // n_shared_experts
    int64_t n_experts = 0;         // n_routed_experts
    int64_t top_k = 0;
};

struct SigmoidMoeWeights {
    RouterWeights router;  // MoE layers
    SwigluMlp mlp;         // dense layers: the MLP; MoE layers: the shared experts (none when n_shared is 0)
};

// Layer `layer`'s feed-forward tensors under `mlp_module` ("model.layers.3.mlp."), dense or MoE,
// with their exact shapes; fills the plan's FFN kind, expert counts and parts, and declares the
// experts to the host.
Expected<void> load_sigmoid_moe_ffn(TensorLoader& load, LoadContext& ctx, const std::string& mlp_module, int layer,
                                    bool moe, const SigmoidMoeShape& shape, const std::vector<DType>& matrix_dtypes,
                                    const Fp8Blocks& fp8, SigmoidMoeWeights& w, LayerPlan& plan);

// A dense layer's MLP or a MoE layer's shared experts into `out`; `who` names the family in errors.
Expected<void> build_dense_or_shared_ffn(const Compute& c, int layer, const SigmoidMoeWeights& w, const std::string& who,
                                         const Rows& in, Rows out);

}  // namespace stormo::toolkit
