// libstormo-kernels-vnni.so: the avx2 float kernels plus the integer road (MXFP4 and GGUF's block
// formats) on VPDPBUSD, in two flavours picked at run time by CPUID: AVX-VNNI (Alder Lake, Zen 5
// and later) or AVX512-VNNI with AVX512VL/BW (Ice Lake, Zen 4 and later). Baseline code: discovery calls describe and
// score on any CPU. Where the CPU has AVX-512 (F, BW, VL), 512-bit float kernels replace the avx2
// ones for the out_in matrix layouts, whichever flavour runs the integer road; where it also has
// AVX512-BF16, the integer road multiplies BF16 matrices by BF16 activations (vdpbf16ps).
//
// The description's cpu_features is the list of the flavour this machine can run (or of
// AVX-VNNI when it can run neither), so the host's own CPUID check, `stormo plugins` and the
// "missing" column tell the truth about this machine; the score follows the flavour of the CPU
// it is asked about, so it is 0 where neither flavour is usable.
#include <cstdlib>
#include <new>
#include <string>

#include "cpu_requirements.hpp"
#include "float_kernels.hpp"
#include "isa_avx512_bf16/bf16_pair_kernels.hpp"
#include "isa_avx512_float/avx512_float_kernels.hpp"
#include "stormo/kernels_plugin.hpp"
#include "vnni_variant.hpp"

namespace {

constexpr const char* kName = "vnni";
constexpr const char* kBaseline = "avx2,fma,f16c";
// Names the flavour to run (avx_vnni or avx512_vnni) instead of CPUID's preference, where the CPU
// can run it: a CPU with both (Sapphire Rapids, Zen 5, some Zen 4 VMs) would otherwise never run
// the AVX-VNNI code, which the tests and bench-kernels then could not reach.
constexpr const char* kFlavourVariable = "STORMO_VNNI_FLAVOUR";

const stormo::PluginDescription& description() {
    // Built once, on first use, from this machine's CPU; immutable afterwards.
    static const stormo::PluginDescription d{
        kName,
        stormo::PluginKind::kernels,
        "0.2.0",
        "AVX-VNNI or AVX512-VNNI (+VL, BW), picked at run time: the avx2 float kernels (512-bit ones "
        "where AVX-512 is usable), and the integer road (u8 x s8 dot, MXFP4 and GGUF Q8_0/Q4_0/Q4_K/Q5_K/Q6_K/MXFP4 x int8) on VPDPBUSD",
        "",
        stormo::simd::vnni_description_features(stormo::detect_cpu_features()),
    };
    return d;
}

class VnniKernels final : public stormo::KernelsPlugin {
public:
    VnniKernels(const stormo::simd::VnniVariant& variant, bool wide_float, bool bf16_pairs)
        : variant_(variant), wide_float_(wide_float), bf16_pairs_(bf16_pairs) {}

    void install(stormo::KernelTable& table) const override {
        stormo::simd::install_float_kernels(table);
        if (wide_float_) stormo::simd::avx512::install_float_kernels(table);
        stormo::simd::install_vnni_variant(variant_, table);
        if (bf16_pairs_) stormo::simd::avx512::install_bf16_pair_kernels(table);
    }

private:
    const stormo::simd::VnniVariant& variant_;
    bool wide_float_;
    bool bf16_pairs_;  // the integer road's BF16 activations (AVX512-BF16)
};

}  // namespace

STORMO_DEFINE_PLUGIN_ABI()

STORMO_PLUGIN_EXPORT const stormo::PluginDescription* stormo_plugin_describe() { return &description(); }

STORMO_PLUGIN_EXPORT int stormo_plugin_score(const stormo::ScoreQuery* query) {
    if (query == nullptr) return 0;
    const stormo::simd::VnniVariant* v = stormo::simd::pick_vnni_variant(query->cpu);
    return v != nullptr ? stormo::simd::score_required_features(v->features, query) : 0;
}

// Refuses to build the kernels on a CPU that cannot run them, even when forced (the host does
// not call it then: defence in depth).
STORMO_PLUGIN_EXPORT stormo::PluginObject* stormo_plugin_create(stormo::Error* error) {
    if (!stormo::simd::cpu_meets(kName, kBaseline, error)) return nullptr;
    const stormo::CpuFeatureSet cpu = stormo::detect_cpu_features();
    try {  // the messages allocate too
        const char* forced = std::getenv(kFlavourVariable);
        const bool by_name = forced != nullptr && *forced != '\0';
        const stormo::simd::VnniVariant* variant =
            by_name ? stormo::simd::find_vnni_variant(forced) : stormo::simd::pick_vnni_variant(cpu);
        if (by_name && (variant == nullptr || !stormo::simd::features_available(variant->features, cpu))) {
            if (error != nullptr)
                *error = stormo::Error{stormo::ErrorKind::unsupported,
                                       std::string(kFlavourVariable) + "=" + forced +
                                           (variant == nullptr ? ": not a vnni flavour (avx_vnni, avx512_vnni)"
                                                               : ": this CPU lacks some of " + std::string(variant->features))};
            return nullptr;
        }
        if (variant == nullptr) {
            if (error != nullptr)
                *error = stormo::Error{stormo::ErrorKind::unsupported,
                                       "vnni kernels need avx_vnni, or avx512_vnni with avx512vl and avx512bw; "
                                       "this CPU has neither"};
            return nullptr;
        }
        return new VnniKernels(*variant, stormo::simd::features_available(stormo::simd::avx512::kFloatFeatures, cpu),
                               stormo::simd::features_available(stormo::simd::avx512::kBf16PairFeatures, cpu));
    } catch (const std::bad_alloc&) {
        if (error != nullptr) *error = stormo::Error{stormo::ErrorKind::resource, "vnni kernels: out of memory"};
        return nullptr;
    }
}
