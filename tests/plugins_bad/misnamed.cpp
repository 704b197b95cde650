// A model plugin whose file is libstormo-model-misnamed.so but whose description says
// "othername": the name in the file and in the description must agree.
#include "stormo/family_plugin.hpp"

STORMO_DEFINE_PLUGIN_ABI()

namespace {
constexpr stormo::PluginDescription kDescription{
    "othername", stormo::PluginKind::model, "0.0.1", "test plugin with a mismatched name", "OtherForCausalLM", nullptr,
};
}  // namespace

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() { return &kDescription; }
STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery*) { return 0; }
STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    if (error != nullptr) *error = stormo::Error{stormo::ErrorKind::internal, "misnamed: must never be created"};
    return nullptr;
}
