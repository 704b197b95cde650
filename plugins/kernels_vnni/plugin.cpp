// libstormo-kernels-vnni.so: the AVX2 float kernels compiled for AVX-VNNI CPUs (Alder Lake,
// Zen 5 and later), plus the integer road's u8 x s8 dot product on VPDPBUSD. Baseline code:
// discovery calls describe and score on any CPU.
#include <new>

#include "cpu_requirements.hpp"
#include "float_kernels.hpp"
#include "int8_kernels.hpp"
#include "stormo/plugin.hpp"

namespace {

constexpr const char* kName = "vnni";
constexpr const char* kFeatures = "avx2,fma,f16c,avx_vnni";

const stormo::PluginDescription kDescription{
    kName,
    stormo::PluginKind::kernels,
    "0.1.0",
    "AVX-VNNI: the avx2 float kernels plus the u8 x s8 dot product (VPDPBUSD)",
    "",
    kFeatures,
};

class VnniKernels final : public stormo::KernelsPlugin {
public:
    void install(stormo::KernelTable& table) const override {
        stormo::simd::install_float_kernels(table, kName);
        table.dot_u8i8 = stormo::simd::dot_u8i8_vnni;
    }
};

}  // namespace

STORMO_DEFINE_PLUGIN_ABI()

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() { return &kDescription; }

STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery* query) {
    return stormo::simd::score_required_features(kFeatures, query);
}

// Refuses to build the kernels on a CPU that cannot run them, even when forced.
STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    if (!stormo::simd::cpu_meets(kName, kFeatures, error)) return nullptr;
    try {
        return new VnniKernels();
    } catch (const std::bad_alloc&) {
        if (error != nullptr) *error = stormo::Error{stormo::ErrorKind::resource, "vnni kernels: out of memory"};
        return nullptr;
    }
}
