#pragma once
// Qwen3-MoE (Qwen3MoeForCausalLM) as the host sees it: a summary of config.json, tensor roles by
// name, loading. GQA attention with per-head RMS QK-norm, a softmax router over all experts with
// top-k (renormalised when norm_topk_prob), SwiGLU experts stored one tensor per expert, dense MLP
// layers where mlp_only_layers and decoder_sparse_step say.
#include <memory>
#include <string_view>

#include "stormo/family_plugin.hpp"

namespace stormo::qwen3_moe {

inline constexpr const char* kName = "qwen3_moe";
inline constexpr const char* kAccepts = "Qwen3MoeForCausalLM,qwen3_moe";

class Qwen3MoeFamily final : public FamilyPlugin {
public:
    Expected<ModelSummary> summarize(const ModelConfig& config) const override;
    TensorRole classify(std::string_view tensor_name) const override;
    Expected<std::unique_ptr<Model>> load(LoadContext& ctx) const override;
    std::vector<std::string> gguf_architectures() const override;  // qwen3_moe_gguf.cpp
    Expected<GgufMappedModel> map_gguf(const GgufView& file) const override;
    std::vector<SynthPreset> synth_presets() const override;  // qwen3_moe_synth.cpp
    Expected<SynthCheckpoint> synth_checkpoint(const SynthRequest& request) const override;
};

}  // namespace stormo::qwen3_moe
