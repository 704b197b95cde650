#pragma once
// The GLM-MoE-DSA model over the family toolkit: multi-head latent attention (toolkit/mla.hpp; the
// session caches only the latent, the rope key and the indexer's key per position) with GLM's own
// math, the DSA lightning indexer that keeps the top index_topk past positions per query; the
// sigmoid router with correction bias, shared experts, and dense first layers.
#include <memory>
#include <vector>

#include "glm_dsa_config.hpp"
#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"
#include "stormo/toolkit/attention.hpp"
#include "stormo/toolkit/decoder_model.hpp"
#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/fp8.hpp"
#include "stormo/toolkit/loading.hpp"
#include "stormo/toolkit/mla.hpp"
#include "stormo/toolkit/router.hpp"
#include "stormo/toolkit/sigmoid_moe.hpp"

namespace stormo::glm_dsa {

struct IndexerWeights {
    WeightView wq_b;                 // [index_heads * index_head_dim, q_lora_rank]
    WeightView wk;                   // [index_head_dim, hidden]
    std::vector<float> k_norm_weight, k_norm_bias;  // LayerNorm [index_head_dim]
    WeightView weights_proj;         // [index_heads, hidden]
};

struct LayerWeights {
    toolkit::MlaWeights mla;
    IndexerWeights indexer;
    toolkit::SigmoidMoeWeights ffn;  // the dense MLP, or the router, shared experts and routed experts' plan
};

// KV buffers of every layer, in this order: MLA's two (toolkit::mla_kv_buffers), then the indexer's keys.
enum KvBuffer : size_t { kv_latent, kv_rope_key, kv_index_key, kv_buffer_count };

// Layer `layer`'s KV buffers in KvBuffer's order: what its LayerPlan declares and what the summary
// plans with.
std::vector<KvBufferDecl> layer_kv(const GlmDsaConfig& c, int layer);

class GlmDsaModel final : public toolkit::DecoderModel {
public:
    static Expected<std::unique_ptr<Model>> load(LoadContext& ctx);
    // The multi-token-prediction layer `index` as a draft model over `main` (toolkit/mtp.hpp): this
    // class with only layer num_hidden_layers + index loaded is its decoder layer.
    static Expected<std::unique_ptr<DraftModel>> load_draft(LoadContext& ctx, const Model& main, int index);

    Expected<void> attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const override;
    Routing route(int layer, const StepContext& ctx, const Rows& normed) const override;
    Expected<void> expert_ffn(int layer, const ExpertView& expert, const Rows& in, Rows out) const override;
    // Dense layers' MLP, and MoE layers' shared experts (added to the routed sum by the host).
    Expected<void> dense_ffn(int layer, const Rows& in, Rows out) const override;

    const GlmDsaConfig& config() const { return cfg_; }

private:
    GlmDsaModel(GlmDsaConfig cfg, Compute compute);
    Expected<void> load_layer(LoadContext& ctx, int layer);

    // The indexer's choice for each row: the positions it keeps, ascending (glm_dsa_indexer.cpp).
    toolkit::KeptPositions select_positions(const toolkit::MlaSelectionInput& in) const;

    GlmDsaConfig cfg_;
    std::vector<LayerWeights> layers_;
    toolkit::Rope rope_;  // over qk_rope_head_dim, shared by the attention and the indexer
    toolkit::MlaOptions mla_options_;
    toolkit::RouterSpec router_spec_;
    toolkit::Fp8Blocks fp8_;
};

}  // namespace stormo::glm_dsa
