// The VNNI flavours, most preferred first. Both need the avx2 float kernels' features too.
#include "vnni_variant.hpp"

#include "cpu_requirements.hpp"
#include "int8_kernels.hpp"

namespace stormo::simd {
namespace {

constexpr VnniVariant kVariants[] = {
    {"avx512_vnni", "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512_vnni", dot_u8i8_avx512_vnni, dot_rows_q8_avx512_vnni,
     matmul_q8_mxfp4_avx512_vnni, matmul_q8_gguf_q8_0_avx512_vnni, matmul_q8_gguf_q4_0_avx512_vnni,
     matmul_q8_gguf_mxfp4_avx512_vnni, matmul_q8_gguf_q4_k_avx512_vnni, matmul_q8_gguf_q5_k_avx512_vnni,
     matmul_q8_gguf_q6_k_avx512_vnni},
    {"avx_vnni", "avx2,fma,f16c,avx_vnni", dot_u8i8_avx_vnni, dot_rows_q8_avx_vnni, matmul_q8_mxfp4_avx_vnni, matmul_q8_gguf_q8_0_avx_vnni,
     matmul_q8_gguf_q4_0_avx_vnni, matmul_q8_gguf_mxfp4_avx_vnni, matmul_q8_gguf_q4_k_avx_vnni,
     matmul_q8_gguf_q5_k_avx_vnni, matmul_q8_gguf_q6_k_avx_vnni},
};

}  // namespace

const VnniVariant* pick_vnni_variant(CpuFeatureSet cpu) {
    for (const VnniVariant& v : kVariants)
        if (features_available(v.features, cpu)) return &v;
    return nullptr;
}

const VnniVariant* find_vnni_variant(const char* name) {
    for (const VnniVariant& v : kVariants)
        if (__builtin_strcmp(v.name, name) == 0) return &v;
    return nullptr;
}

void install_vnni_variant(const VnniVariant& v, KernelTable& t) {
    t.dot_u8i8 = v.dot_u8i8;
    t.dot_rows_q8 = v.dot_rows_q8;
    t.matmul_q8[static_cast<size_t>(WeightFormat::MXFP4)] = v.matmul_q8_mxfp4;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q8_0)] = v.gguf_q8_0;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q4_0)] = v.gguf_q4_0;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_MXFP4)] = v.gguf_mxfp4;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q4_K)] = v.gguf_q4_k;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q5_K)] = v.gguf_q5_k;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q6_K)] = v.gguf_q6_k;
}

const char* vnni_description_features(CpuFeatureSet cpu) {
    const VnniVariant* v = pick_vnni_variant(cpu);
    return v != nullptr ? v->features : kVariants[1].features;  // AVX-VNNI's
}

}  // namespace stormo::simd
