#pragma once
// GLM MoE with DeepSeek sparse attention (GlmMoeDsaForCausalLM, model_type glm_moe_dsa): MLA
// attention with a compressed KV latent plus a rope key, the DSA indexer choosing which
// positions each query attends, a sigmoid router with correction bias and group limits, shared
// experts, and the first layers dense (first_k_dense_replace / mlp_layer_types).
// Multi-token-prediction layers (num_nextn_predict_layers) load only as a draft model (load_draft,
// for `--speculate mtp`).
#include <memory>
#include <string_view>

#include "stormo/family_plugin.hpp"

namespace stormo::glm_dsa {

inline constexpr const char* kName = "glm_dsa";
inline constexpr const char* kAccepts = "GlmMoeDsaForCausalLM,glm_moe_dsa";

class GlmDsaFamily final : public FamilyPlugin {
public:
    Expected<ModelSummary> summarize(const ModelConfig& config) const override;
    TensorRole classify(std::string_view tensor_name) const override;
    Expected<std::unique_ptr<Model>> load(LoadContext& ctx) const override;
    Expected<std::unique_ptr<DraftModel>> load_draft(LoadContext& ctx, const Model& main, int index) const override;
    std::vector<std::string> gguf_architectures() const override;  // glm_dsa_gguf.cpp
    Expected<GgufMappedModel> map_gguf(const GgufView& file) const override;
    std::vector<SynthPreset> synth_presets() const override;  // glm_dsa_synth.cpp
    Expected<SynthCheckpoint> synth_checkpoint(const SynthRequest& request) const override;
};

}  // namespace stormo::glm_dsa
