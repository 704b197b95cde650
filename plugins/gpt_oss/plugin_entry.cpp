// The four C entry points of libstormo-model-gpt_oss.so.
#include <new>

#include "gpt_oss_family.hpp"

namespace {

constexpr const char* kAccepts = "GptOssForCausalLM,gpt_oss";

const stormo::PluginDescription kDescription{
    "gpt_oss",
    stormo::PluginKind::model,
    "0.1.0",
    "GPT-OSS: GQA with sinks, sliding/full layers, YaRN RoPE, top-k MoE with clipped SwiGLU (BF16, MXFP4)",
    kAccepts,
    "",
};

}  // namespace

STORMO_DEFINE_PLUGIN_ABI()

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() { return &kDescription; }

STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery* query) {
    if (query == nullptr || query->config == nullptr) return 0;
    return stormo::score_model_config(*query->config, kAccepts);
}

STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    auto* family = new (std::nothrow) stormo::gpt_oss::GptOssFamily();
    if (family == nullptr && error != nullptr)
        *error = stormo::Error{stormo::ErrorKind::resource, "gpt_oss: out of memory creating the family"};
    return family;
}
