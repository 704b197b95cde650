// A small family plugin, built out of tree on the installed SDK and family toolkit: it
// accepts "ToyForCausalLM" / "toy", reads three dimensions with the toolkit's config reader, and
// sorts tensors by name. Its forward pass (toy_model.cpp), its GGUF architecture "toy"
// (toy_gguf.cpp) and its synth preset (toy_synth.cpp) are the toolkit's pieces put together.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/family_plugin.hpp"
#include "stormo/toolkit/config_reader.hpp"
#include "stormo/toolkit/plugin_entry.hpp"
#include "toy_gguf.hpp"
#include "toy_model.hpp"
#include "toy_synth.hpp"

namespace {

class ToyFamily final : public stormo::FamilyPlugin {
public:
    stormo::Expected<stormo::ModelSummary> summarize(const stormo::ModelConfig& config) const override {
        stormo::toolkit::ConfigReader r(config);
        stormo::ModelSummary s;
        s.hidden_size = static_cast<size_t>(r.positive("hidden_size"));
        s.n_layers = static_cast<int>(r.positive("num_hidden_layers"));
        s.vocab_size = static_cast<size_t>(r.positive("vocab_size"));
        s.dimensions = r.integers_read();
        return r.result(std::move(s));
    }

    stormo::TensorRole classify(std::string_view name) const override {
        if (name.starts_with("model.embed_tokens.")) return stormo::TensorRole::embedding;
        if (name.starts_with("lm_head.")) return stormo::TensorRole::head;
        return stormo::TensorRole::other;
    }

    stormo::Expected<std::unique_ptr<stormo::Model>> load(stormo::LoadContext& ctx) const override {
        return toy::load_toy_model(ctx);
    }

    std::vector<std::string> gguf_architectures() const override { return {toy::kGgufArchitecture}; }
    stormo::Expected<stormo::GgufMappedModel> map_gguf(const stormo::GgufView& file) const override {
        return toy::map_toy_gguf(file);
    }

    std::vector<stormo::SynthPreset> synth_presets() const override { return toy::synth_presets(); }
    stormo::Expected<stormo::SynthCheckpoint> synth_checkpoint(const stormo::SynthRequest& request) const override {
        return toy::synth_checkpoint(request);
    }
};

}  // namespace

STORMO_FAMILY_PLUGIN(ToyFamily, "toy", "1.0.0", "an out-of-tree example family", "ToyForCausalLM,toy")
