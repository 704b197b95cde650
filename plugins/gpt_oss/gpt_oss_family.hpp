#pragma once
// The GPT-OSS family as the host sees it: a summary of config.json, tensor roles by name, loading.
#include "stormo/family_plugin.hpp"

namespace stormo::gpt_oss {

class GptOssFamily final : public FamilyPlugin {
public:
    Expected<ModelSummary> summarize(const ModelConfig& config) const override;
    TensorRole classify(std::string_view tensor_name) const override;
    Expected<std::unique_ptr<Model>> load(LoadContext& ctx) const override;
    std::vector<std::string> gguf_architectures() const override;  // gpt_oss_gguf.cpp
    Expected<GgufMappedModel> map_gguf(const GgufView& file) const override;
    std::vector<SynthPreset> synth_presets() const override;  // gpt_oss_synth.cpp
    Expected<SynthCheckpoint> synth_checkpoint(const SynthRequest& request) const override;
};

}  // namespace stormo::gpt_oss
