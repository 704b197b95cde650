// A kernels plugin compiled against SDK headers in which WeightView gained a member (the build
// writes that copy of the headers: tests/CMakeLists.txt). Its ABI string's layout hash differs
// from the host's, so the loader must refuse it before calling anything but stormo_plugin_abi.
#include "stormo/kernels_plugin.hpp"

STORMO_DEFINE_PLUGIN_ABI()

namespace {
constexpr stormo::PluginDescription kDescription{
    "layout", stormo::PluginKind::kernels, "0.0.1", "test plugin built on a changed WeightView", nullptr, "",
};
}  // namespace

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() { return &kDescription; }
STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery*) { return 1; }
STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    if (error != nullptr) *error = stormo::Error{stormo::ErrorKind::internal, "layout: must never be created"};
    return nullptr;
}
