#pragma once
// The GLM-MoE-DSA model over the family toolkit. GLM's own math: multi-head latent attention (a
// low-rank query, a compressed KV latent with a decoupled RoPE key; the session caches only the
// latent, the rope key and the indexer's key per position), the DSA lightning indexer that keeps
// the top index_topk past positions per query, the sigmoid router with correction bias, shared
// experts, and dense first layers.
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
#include "stormo/toolkit/router.hpp"

namespace stormo::glm_dsa {

struct MlaWeights {
    WeightView q_a;                  // [q_lora_rank, hidden]
    std::vector<float> q_a_norm;     // [q_lora_rank]
    WeightView q_b;                  // [heads * qk_head_dim, q_lora_rank]
    WeightView kv_a;                 // [kv_lora_rank + rope, hidden]
    std::vector<float> kv_a_norm;    // [kv_lora_rank]
    WeightView kv_b;                 // [heads * (nope + v), kv_lora_rank]
    WeightView o;                    // [hidden, heads * v]
};

struct IndexerWeights {
    WeightView wq_b;                 // [index_heads * index_head_dim, q_lora_rank]
    WeightView wk;                   // [index_head_dim, hidden]
    std::vector<float> k_norm_weight, k_norm_bias;  // LayerNorm [index_head_dim]
    WeightView weights_proj;         // [index_heads, hidden]
};

// kv_b_proj split per head for weight absorption: rows h*(nope+v) .. +nope are head h's K half
// [nope, rank], the next v rows its V half [v, rank]. The K half is read transposed (an in_out
// view: q_lat[rank] = W_kb^T q_nope); an FP8 kv_b_proj is dequantized once into `dense` (F32)
// because the block formats have no in_out kernels.
struct AbsorbedKvB {
    WeightView matrix;              // the whole kv_b_proj (or `dense`), F32/BF16/F16 out_in
    size_t nope = 0, v = 0, rank = 0;
    std::vector<float> dense;       // the dequantized copy, when kv_b_proj is FP8
    WeightView k_half(size_t head) const;
    WeightView v_half(size_t head) const;
};

struct LayerWeights {
    MlaWeights mla;
    AbsorbedKvB absorbed;
    IndexerWeights indexer;
    toolkit::RouterWeights router;   // MoE layers: mlp.gate
    toolkit::SwigluMlp mlp;          // dense layers: mlp; MoE layers: the shared experts
};

// KV buffers of every layer, in this order.
enum KvBuffer : size_t { kv_latent, kv_rope_key, kv_index_key, kv_buffer_count };

class GlmDsaModel final : public toolkit::DecoderModel {
public:
    static Expected<std::unique_ptr<Model>> load(LoadContext& ctx);

    Expected<void> attention(int layer, const StepContext& ctx, const Rows& normed, KvView kv, Rows out) const override;
    Routing route(int layer, const StepContext& ctx, const Rows& normed) const override;
    Expected<void> expert_ffn(int layer, const ExpertView& expert, const Rows& in, Rows out) const override;
    // Dense layers' MLP, and MoE layers' shared experts (added to the routed sum by the host).
    Expected<void> dense_ffn(int layer, const Rows& in, Rows out) const override;

    const GlmDsaConfig& config() const { return cfg_; }

private:
    GlmDsaModel(GlmDsaConfig cfg, Compute compute);
    Expected<void> load_globals(LoadContext& ctx);
    Expected<void> load_layer(LoadContext& ctx, int layer);

    // context [rows, heads * v] over the kept positions: the absorbed path (what runs) and the
    // expanded one (transformers' order, for the tracer).
    void attend_absorbed(int layer, std::span<const int64_t> positions, const std::vector<float>& q,
                         const std::vector<std::vector<int64_t>>& kept, const KvView& kv, float scale,
                         std::vector<float>& context) const;
    void attend_expanded(int layer, std::span<const int64_t> positions, const std::vector<float>& q,
                         const std::vector<std::vector<int64_t>>& kept, const KvView& kv, float scale,
                         std::vector<float>& context) const;
    // The indexer's choice for each row: the positions it keeps, ascending (glm_dsa_indexer.cpp).
    std::vector<std::vector<int64_t>> select_positions(int layer, std::span<const int64_t> positions,
                                                       const std::vector<float>& q_resid, const Rows& normed,
                                                       const KvView& kv) const;

    GlmDsaConfig cfg_;
    std::vector<LayerWeights> layers_;
    toolkit::Rope rope_;  // over qk_rope_head_dim, shared by the attention and the indexer
    toolkit::RouterSpec router_spec_;
    std::vector<std::vector<float>> correction_bias_;  // per layer: e_score_correction_bias
    toolkit::Fp8Blocks fp8_;
};

}  // namespace stormo::glm_dsa
