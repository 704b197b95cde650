#pragma once
// The GPT-OSS model over the family toolkit: its resident tensors (embedding, attention, routers,
// norms, head) in their checkpoint dtype, and the per-layer steps the host's pipeline calls.
// What is GPT-OSS's alone: attention with a learned sink per head and sliding/full layers, the
// router's top-k-then-softmax, and experts with the clamped, interleaved SwiGLU and biases.
#include <memory>
#include <string>
#include <vector>

#include "gpt_oss_config.hpp"
#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"
#include "stormo/toolkit/attention.hpp"
#include "stormo/toolkit/decoder_model.hpp"
#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/loading.hpp"
#include "stormo/toolkit/router.hpp"

namespace stormo::gpt_oss {

// How a checkpoint stores a layer's experts (experts.cpp).
enum class ExpertForm {
    dense,   // transformers' BF16 gate_up_proj [E, in, 2 * inter] (gate and up interleaved), down_proj [E, inter, hidden]
    mxfp4,   // transformers' MXFP4: *_blocks + *_scales, [E, out, in / 32], gate and up interleaved
    linear,  // stacked nn.Linear matrices gate_proj/up_proj/down_proj.weight [E, out, in] + .bias (a GGUF file's form)
};

// Layer `layer`'s KV buffers (K and V; a sliding layer's as a ring of its window): what its
// LayerPlan declares and what the summary plans with.
std::vector<KvBufferDecl> layer_kv(const GptOssConfig& c, int layer);

struct LayerWeights {
    toolkit::GqaWeights attn;                // q/k/v/o with biases, sinks
    toolkit::RouterWeights router;           // [experts, hidden] + bias
    ExpertForm experts = ExpertForm::dense;
};

class GptOssModel final : public toolkit::DecoderModel {
public:
    // Reads config.json, declares and loads every resident tensor, declares the experts.
    static Expected<std::unique_ptr<Model>> load(LoadContext& ctx);

    Expected<void> attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const override;
    Routing route(int layer, const StepContext& ctx, const Rows& normed) const override;
    Expected<void> expert_ffn(int layer, const ExpertView& expert, const Rows& in, Rows out) const override;
    // Every GPT-OSS layer is MoE without shared experts, so the host never plans a dense FFN; a
    // call anyway is an error.
    Expected<void> dense_ffn(int layer, const Rows& in, Rows out) const override;

    const GptOssConfig& config() const { return cfg_; }

private:
    GptOssModel(GptOssConfig cfg, Compute compute);
    Expected<void> load_layer(LoadContext& ctx, int layer);

    GptOssConfig cfg_;
    std::vector<LayerWeights> layers_;
    toolkit::Rope rope_;
    std::vector<toolkit::GqaOptions> attention_options_;  // per layer: the window differs
    toolkit::RouterSpec router_spec_;
};

// Expert parts of one layer, in the order expert_ffn reads them (experts.cpp).
std::vector<ExpertPartDecl> expert_part_decls(const GptOssConfig& cfg, int layer, ExpertForm form);
// How a layer's experts are stored, from quantization_config and the checkpoint's tensors.
Expected<ExpertForm> layer_expert_form(const GptOssConfig& cfg, const LoadContext& ctx, int layer);

}  // namespace stormo::gpt_oss
