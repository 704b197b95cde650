// The qwen3_moe plugin's C entry points, and its load, which this build cannot do yet.
#include "qwen3_moe_family.hpp"

namespace stormo::qwen3_moe {

Expected<std::unique_ptr<Model>> Qwen3MoeFamily::load(LoadContext&) const {
    return fail(ErrorKind::unsupported,
                "qwen3_moe: the forward pass of this family is not available in this build; supported: gpt_oss");
}

namespace {

constexpr PluginDescription kDescription{
    kName,
    PluginKind::model,
    "0.1.0",
    "Qwen3-MoE: GQA with QK-norm, softmax top-k router (dimensions and census; no forward pass yet)",
    kAccepts,
    nullptr,
};

}  // namespace
}  // namespace stormo::qwen3_moe

STORMO_DEFINE_PLUGIN_ABI()

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() {
    return &stormo::qwen3_moe::kDescription;
}

STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery* query) {
    if (query == nullptr || query->config == nullptr) return 0;
    return stormo::score_model_config(*query->config, stormo::qwen3_moe::kAccepts);
}

STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    try {
        return new stormo::qwen3_moe::Qwen3MoeFamily();
    } catch (const std::exception& e) {
        if (error != nullptr) *error = stormo::Error{stormo::ErrorKind::resource, std::string("qwen3_moe: ") + e.what()};
        return nullptr;
    }
}
