#pragma once
// The GPT-OSS model: its resident tensors (embedding, attention, routers, norms, head) as weight
// views in their checkpoint dtype, and the per-layer steps the host's pipeline calls. Routed
// experts are declared to the host at load and arrive through ExpertView in expert_ffn.
#include <memory>
#include <string>
#include <vector>

#include "gpt_oss_config.hpp"
#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"

namespace stormo::gpt_oss {

struct AttentionWeights {
    WeightView q, k, v, o;                                 // nn.Linear layout [out, in]
    std::vector<float> q_bias, k_bias, v_bias, o_bias;     // empty when attention_bias is false
    std::vector<float> sinks;                              // [heads]
};

struct LayerWeights {
    std::vector<float> input_norm;           // input_layernorm.weight
    std::vector<float> post_attention_norm;  // post_attention_layernorm.weight
    AttentionWeights attn;
    WeightView router;                       // [experts, hidden]
    std::vector<float> router_bias;          // [experts]
    bool mxfp4_experts = false;              // expert parts are blocks + scales (else BF16 [in, out])
};

class GptOssModel final : public Model {
public:
    // Reads config.json, declares and loads every resident tensor, declares the experts.
    static Expected<std::unique_ptr<Model>> load(LoadContext& ctx);

    int n_layers() const override { return static_cast<int>(cfg_.n_layers); }
    size_t hidden_size() const override { return static_cast<size_t>(cfg_.hidden_size); }
    size_t vocab_size() const override { return static_cast<size_t>(cfg_.vocab_size); }
    const LayerPlan& layer_plan(int layer) const override { return plans_.at(static_cast<size_t>(layer)); }

    Expected<void> embed(std::span<const int32_t> tokens, Rows out) const override;
    void norm(NormSite site, int layer, const Rows& in, Rows out) const override;
    // Precondition (the host's): every ctx.positions[r] < kv.capacity, rows ascending and the
    // positions before a block's first row already written by earlier calls. A row whose position
    // is outside [0, capacity) is never written to the cache; its output row is NaN.
    Expected<void> attention(int layer, const StepContext& ctx, const Rows& normed, KvView kv, Rows out) const override;
    Routing route(int layer, const StepContext& ctx, const Rows& normed) const override;
    Expected<void> expert_ffn(int layer, const ExpertView& expert, const Rows& in, Rows out) const override;
    // GPT-OSS has no dense FFN: every layer's plan is MoE without shared experts, so the host never
    // calls this. If it is called anyway, the output is NaN so the misuse cannot pass unnoticed.
    Expected<void> dense_ffn(int layer, const Rows& in, Rows out) const override;
    void head(const Rows& normed, Rows logits) const override;

    const GptOssConfig& config() const { return cfg_; }

private:
    GptOssModel(GptOssConfig cfg, Compute compute);

    Expected<void> load_globals(LoadContext& ctx);
    Expected<void> load_layer(LoadContext& ctx, int layer);
    Expected<void> load_attention(LoadContext& ctx, int layer, AttentionWeights& w);
    Expected<WeightView> load_matrix(LoadContext& ctx, const std::string& name, TensorRole role, int64_t rows,
                                     int64_t cols);
    Expected<std::vector<float>> load_vector(LoadContext& ctx, const std::string& name, TensorRole role, int64_t n);

    // Attention pieces (attention.cpp).
    void project_qkv(const AttentionWeights& w, const Rows& normed, std::vector<float>& q, std::vector<float>& k,
                     std::vector<float>& v) const;
    void apply_rope(std::span<const int64_t> positions, std::vector<float>& q, std::vector<float>& k) const;
    void attend_rows(int layer, std::span<const int64_t> positions, const std::vector<float>& q, const KvView& kv,
                     std::vector<float>& context, std::vector<float>* probs, size_t probs_width) const;

    GptOssConfig cfg_;
    Compute compute_;
    std::vector<Tensor> resident_;  // owns the bytes the weight views point into
    WeightView embed_;
    WeightView head_;
    std::vector<float> final_norm_;
    std::vector<LayerWeights> layers_;
    std::vector<LayerPlan> plans_;
    std::vector<float> inv_freq_;     // RoPE inverse frequencies [head_dim / 2]
    float rope_scaling_ = 1.0f;       // YaRN attention factor applied to cos and sin
    float attention_scale_ = 1.0f;    // head_dim ** -0.5
};

// Expert parts of one layer, in the order expert_ffn reads them (experts.cpp).
std::vector<ExpertPartDecl> expert_part_decls(const GptOssConfig& cfg, int layer, bool mxfp4);
// Whether a layer's experts are MXFP4, from quantization_config and the checkpoint's tensors.
Expected<bool> layer_experts_mxfp4(const GptOssConfig& cfg, const LoadContext& ctx, int layer);

}  // namespace stormo::gpt_oss
