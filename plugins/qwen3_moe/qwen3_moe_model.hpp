#pragma once
// The Qwen3-MoE model over the family toolkit. What is Qwen3's own: the names, the QK-norm weights
// (an RMSNorm over head_dim on every q and k head, before RoPE), the router rule (softmax over all
// experts, then top-k, renormalised when norm_topk_prob), experts as three separate matrices per
// expert, and which layers are dense (mlp_only_layers, decoder_sparse_step).
#include <memory>
#include <vector>

#include "qwen3_moe_config.hpp"
#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"
#include "stormo/toolkit/attention.hpp"
#include "stormo/toolkit/decoder_model.hpp"
#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/fp8.hpp"
#include "stormo/toolkit/loading.hpp"
#include "stormo/toolkit/router.hpp"

namespace stormo::qwen3_moe {

// Layer `layer`'s KV buffers (K and V): what its LayerPlan declares and what the summary plans with.
std::vector<KvBufferDecl> layer_kv(const Qwen3MoeConfig& c, int layer);

struct LayerWeights {
    toolkit::GqaWeights attn;                // q/k/v/o, q_norm and k_norm
    toolkit::RouterWeights router;           // MoE layers: mlp.gate [experts, hidden]
    toolkit::SwigluMlp mlp;                  // dense layers: mlp.{gate,up,down}_proj
};

class Qwen3MoeModel final : public toolkit::DecoderModel {
public:
    static Expected<std::unique_ptr<Model>> load(LoadContext& ctx);

    Expected<void> attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const override;
    Routing route(int layer, const StepContext& ctx, const Rows& normed) const override;
    Expected<void> expert_ffn(int layer, const ExpertView& expert, const Rows& in, Rows out) const override;
    // The dense MLP of the layers mlp_only_layers / decoder_sparse_step make dense (Qwen3-MoE has
    // no shared experts).
    Expected<void> dense_ffn(int layer, const Rows& in, Rows out) const override;

private:
    Qwen3MoeModel(Qwen3MoeConfig cfg, Compute compute);
    Expected<void> load_layer(LoadContext& ctx, int layer);

    Qwen3MoeConfig cfg_;
    std::vector<LayerWeights> layers_;
    toolkit::Rope rope_;
    toolkit::GqaOptions attention_options_;
    toolkit::RouterSpec router_spec_;
    toolkit::Fp8Blocks fp8_;  // enabled for checkpoints shipped in block-scaled FP8
};

}  // namespace stormo::qwen3_moe
