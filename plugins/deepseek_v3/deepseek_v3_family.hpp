#pragma once
// DeepSeek-V3 (DeepseekV3ForCausalLM, model_type deepseek_v3; also DeepSeek-R1, V3.1 and Kimi-K2):
// multi-head latent attention with a compressed KV latent plus a rope key (interleaved rope
// layout, YaRN with DeepSeek's mscale), q through a low-rank path or a plain q_proj, a sigmoid
// router with correction bias and group-limited selection, shared experts, and the first layers
// dense (first_k_dense_replace). Multi-token-prediction layers (num_nextn_predict_layers) load
// only as a draft model (load_draft, for `--speculate mtp`).
#include <memory>
#include <string_view>

#include "stormo/family_plugin.hpp"

namespace stormo::deepseek_v3 {

inline constexpr const char* kName = "deepseek_v3";
inline constexpr const char* kAccepts = "DeepseekV3ForCausalLM,deepseek_v3";

class DeepseekV3Family final : public FamilyPlugin {
public:
    Expected<ModelSummary> summarize(const ModelConfig& config) const override;
    TensorRole classify(std::string_view tensor_name) const override;
    Expected<std::unique_ptr<Model>> load(LoadContext& ctx) const override;
    Expected<std::unique_ptr<DraftModel>> load_draft(LoadContext& ctx, const Model& main, int index) const override;
    std::vector<std::string> gguf_architectures() const override;  // deepseek_v3_gguf.cpp
    Expected<GgufMappedModel> map_gguf(const GgufView& file) const override;
    std::vector<SynthPreset> synth_presets() const override;  // deepseek_v3_synth.cpp
    Expected<SynthCheckpoint> synth_checkpoint(const SynthRequest& request) const override;
};

}  // namespace stormo::deepseek_v3
