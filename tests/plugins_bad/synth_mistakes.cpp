// A family plugin whose synth presets are wrong in each way the host must catch: a preset name a
// built-in family already describes, a tensor listed twice, a config.json that is not JSON.
#include <memory>
#include <string>

#include "stormo/toolkit/plugin_entry.hpp"

namespace {

class SynthMistakes final : public stormo::FamilyPlugin {
public:
    stormo::Expected<stormo::ModelSummary> summarize(const stormo::ModelConfig&) const override {
        return stormo::ModelSummary{};
    }
    stormo::TensorRole classify(std::string_view) const override { return stormo::TensorRole::other; }
    stormo::Expected<std::unique_ptr<stormo::Model>> load(stormo::LoadContext&) const override {
        return stormo::fail(stormo::ErrorKind::unsupported, "synth_mistakes: a test plugin with no model");
    }

    std::vector<stormo::SynthPreset> synth_presets() const override {
        return {{"gpt-oss-tiny", "a name gpt_oss already gives", 1, 0, 0},
                {"tensor-twice", "model.norm.weight listed twice", 1, 0, 0},
                {"config-not-json", "a config.json that does not parse", 1, 0, 0}};
    }
    stormo::Expected<stormo::SynthCheckpoint> synth_checkpoint(const stormo::SynthRequest& request) const override {
        const stormo::SynthTensor norm{"model.norm.weight", stormo::DType::BF16, {8}, {}};
        stormo::SynthCheckpoint c{"{\"model_type\": \"synth_mistakes\"}\n", "{}\n", {norm}};
        if (request.preset == "tensor-twice") c.tensors.push_back(norm);
        if (request.preset == "config-not-json") c.config_json = "{\"model_type\": ";
        return c;
    }
};

}  // namespace

STORMO_FAMILY_PLUGIN(SynthMistakes, "synth_mistakes", "0.0.1", "test plugin with wrong synth presets",
                     "SynthMistakesForCausalLM")
