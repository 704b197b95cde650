// A valid kernels plugin named "dup", built into two directories: the first found loads, the
// second is refused as a duplicate naming both paths. It needs no CPU feature and installs no
// entry (the reference kernels stay), which is a legal kernels plugin.
#include "stormo/kernels_plugin.hpp"

STORMO_DEFINE_PLUGIN_ABI()

namespace {

constexpr stormo::PluginDescription kDescription{
    "dup", stormo::PluginKind::kernels, "0.0.1", "test plugin present in two directories", nullptr, "",
};

class DupKernels final : public stormo::KernelsPlugin {
public:
    void install(stormo::KernelTable&) const override {}
};

}  // namespace

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() { return &kDescription; }
STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery* query) {
    return query == nullptr ? 0 : stormo::score_cpu_features({}, query->cpu);
}
STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error*) { return new DupKernels(); }
