// The VNNI flavours, most preferred first. Both need the avx2 float kernels' features too.
#include "vnni_variant.hpp"

#include "cpu_requirements.hpp"
#include "int8_kernels.hpp"

namespace stormo::simd {
namespace {

constexpr VnniVariant kVariants[] = {
    {"avx512_vnni", "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512_vnni", dot_u8i8_avx512_vnni,
     matmul_q8_mxfp4_avx512_vnni},
    {"avx_vnni", "avx2,fma,f16c,avx_vnni", dot_u8i8_avx_vnni, matmul_q8_mxfp4_avx_vnni},
};

}  // namespace

const VnniVariant* pick_vnni_variant(CpuFeatureSet cpu) {
    for (const VnniVariant& v : kVariants)
        if (features_available(v.features, cpu)) return &v;
    return nullptr;
}

const char* vnni_description_features(CpuFeatureSet cpu) {
    const VnniVariant* v = pick_vnni_variant(cpu);
    return v != nullptr ? v->features : kVariants[1].features;  // AVX-VNNI's
}

}  // namespace stormo::simd
