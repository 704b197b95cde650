// The glm_dsa plugin's C entry points, and its load, which this build cannot do yet.
#include "glm_dsa_family.hpp"

namespace stormo::glm_dsa {

Expected<std::unique_ptr<Model>> GlmDsaFamily::load(LoadContext&) const {
    return fail(ErrorKind::unsupported,
                "glm_dsa: the forward pass of this family is not available in this build; supported: gpt_oss");
}

namespace {

constexpr PluginDescription kDescription{
    kName,
    PluginKind::model,
    "0.1.0",
    "GLM MoE with DeepSeek sparse attention: MLA, DSA indexer, sigmoid router (dimensions and census; no forward pass yet)",
    kAccepts,
    nullptr,
};

}  // namespace
}  // namespace stormo::glm_dsa

STORMO_DEFINE_PLUGIN_ABI()

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() {
    return &stormo::glm_dsa::kDescription;
}

STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery* query) {
    if (query == nullptr || query->config == nullptr) return 0;
    return stormo::score_model_config(*query->config, stormo::glm_dsa::kAccepts);
}

STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    try {
        return new stormo::glm_dsa::GlmDsaFamily();
    } catch (const std::exception& e) {
        if (error != nullptr) *error = stormo::Error{stormo::ErrorKind::resource, std::string("glm_dsa: ") + e.what()};
        return nullptr;
    }
}
