// libstormo-kernels-avx2.so: float kernels for AVX2 + FMA + F16C (Haswell, Zen and later).
// This file is baseline code (no SIMD flags): discovery calls describe and score on any CPU.
#include <new>

#include "cpu_requirements.hpp"
#include "float_kernels.hpp"
#include "q8_kernels.hpp"
#include "stormo/kernels_plugin.hpp"

namespace {

constexpr const char* kName = "avx2";
constexpr const char* kFeatures = "avx2,fma,f16c";

const stormo::PluginDescription kDescription{
    kName,
    stormo::PluginKind::kernels,
    "0.2.0",
    "AVX2+FMA+F16C: matmul F32/BF16/F16/MXFP4 and GGUF Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/Q2_K/Q3_K/Q4_K/Q5_K/Q6_K/IQ4_NL/IQ4_XS/IQ1_S/IQ1_M/IQ2_XXS/IQ2_XS/IQ2_S/IQ3_XXS/IQ3_S/MXFP4 (out_in) and "
    "F32/BF16/F16 (in_out), row decode, rmsnorm, dot, axpy; integer road MXFP4 and GGUF Q8_0/Q4_0/Q4_K/Q5_K/Q6_K/MXFP4 x int8 (pmaddubsw)",
    "",
    kFeatures,
};

class Avx2Kernels final : public stormo::KernelsPlugin {
public:
    void install(stormo::KernelTable& table) const override {
        stormo::simd::install_float_kernels(table);
        const size_t mxfp4 = static_cast<size_t>(stormo::WeightFormat::MXFP4);
        table.matmul_q8[mxfp4] = stormo::simd::matmul_q8_mxfp4_avx2;
        stormo::simd::install_q8_gguf_kernels(table);
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
        return new Avx2Kernels();
    } catch (const std::bad_alloc&) {
        if (error != nullptr) *error = stormo::Error{stormo::ErrorKind::resource, "avx2 kernels: out of memory"};
        return nullptr;
    }
}
