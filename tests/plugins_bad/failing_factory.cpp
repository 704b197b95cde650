// A model plugin whose factory fails: it must show as refused with the factory's own message.
#include "stormo/family_plugin.hpp"

STORMO_DEFINE_PLUGIN_ABI()

namespace {
constexpr stormo::PluginDescription kDescription{
    "failing", stormo::PluginKind::model, "0.0.1", "test plugin whose factory fails", "FailingForCausalLM", nullptr,
};
}  // namespace

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() { return &kDescription; }
STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery* query) {
    return query != nullptr && query->config != nullptr ? stormo::score_model_config(*query->config, "FailingForCausalLM") : 0;
}
STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    if (error != nullptr)
        *error = stormo::Error{stormo::ErrorKind::resource, "failing: this factory refuses on purpose (test plugin)"};
    return nullptr;
}
