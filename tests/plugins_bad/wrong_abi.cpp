// A kernels plugin built "for another ABI": every entry point exists, but stormo_plugin_abi
// names a different SDK and compiler, so the loader must refuse it before calling anything else.
#include "stormo/kernels_plugin.hpp"

STORMO_PLUGIN_EXPORT const char* stormo_plugin_abi() { return "stormo-sdk-0/test-compiler-1/test-stdlib"; }

namespace {
constexpr stormo::PluginDescription kDescription{
    "wrongabi", stormo::PluginKind::kernels, "0.0.1", "test plugin built for another ABI", nullptr, "",
};
}  // namespace

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() { return &kDescription; }
STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery*) { return 1; }
STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    if (error != nullptr) *error = stormo::Error{stormo::ErrorKind::internal, "wrongabi: must never be created"};
    return nullptr;
}
