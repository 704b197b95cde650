// The smallest family plugin: it accepts "ToyForCausalLM" / "toy", reads three dimensions, and
// sorts tensors by name. It has no forward pass, and says so when asked to load.
#include <memory>
#include <string>
#include <string_view>

#include "stormo/family_plugin.hpp"

namespace {

constexpr const char* kAccepts = "ToyForCausalLM,toy";

class ToyFamily final : public stormo::FamilyPlugin {
public:
    stormo::Expected<stormo::ModelSummary> summarize(const stormo::ModelConfig& config) const override {
        stormo::ModelSummary s;
        for (const char* key : {"hidden_size", "num_hidden_layers", "vocab_size"}) {
            auto v = config.integer(key);
            if (!v) return tl::unexpected(v.error());
            s.dimensions.emplace_back(key, *v);
        }
        s.hidden_size = static_cast<size_t>(s.dimensions[0].second);
        s.n_layers = static_cast<int>(s.dimensions[1].second);
        s.vocab_size = static_cast<size_t>(s.dimensions[2].second);
        return s;
    }

    stormo::TensorRole classify(std::string_view name) const override {
        if (name.starts_with("model.embed_tokens.")) return stormo::TensorRole::embedding;
        if (name.starts_with("lm_head.")) return stormo::TensorRole::head;
        return stormo::TensorRole::other;
    }

    stormo::Expected<std::unique_ptr<stormo::Model>> load(stormo::LoadContext&) const override {
        return stormo::fail(stormo::ErrorKind::unsupported, "toy: an example family with no forward pass");
    }
};

constexpr stormo::PluginDescription kDescription{
    "toy", stormo::PluginKind::model, "1.0.0", "an out-of-tree example family", kAccepts, nullptr,
};

}  // namespace

STORMO_DEFINE_PLUGIN_ABI()

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() { return &kDescription; }

STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery* query) {
    if (query == nullptr || query->config == nullptr) return 0;
    return stormo::score_model_config(*query->config, kAccepts);
}

STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    try {
        return new ToyFamily();
    } catch (const std::exception& e) {
        if (error != nullptr) *error = stormo::Error{stormo::ErrorKind::resource, std::string("toy: ") + e.what()};
        return nullptr;
    }
}
