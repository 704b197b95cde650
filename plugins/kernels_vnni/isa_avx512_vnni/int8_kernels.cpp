// The int8 dot on AVX512-VNNI (EVEX vpdpbusd on 256-bit registers through AVX512VL: Ice Lake,
// Zen 4 and later); this flavour's matrix kernels are q8_mxfp4_512.cpp (MXFP4), q8_gguf_512.cpp
// (GGUF's Q8_0, Q4_0, MXFP4) and q8_kquants_512.cpp (Q4_K, Q5_K, Q6_K). Compiled with -mavx2 -mfma
// -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512vnni -ffp-contract=off; selected only where the
// CPU and OS enable all of them.
#include <immintrin.h>

#include "dot_rows_q8_blocks.hpp"
#include "dot_u8i8_blocks.hpp"
#include "int8_kernels.hpp"

namespace stormo::simd {
namespace {

struct Avx512Vnni {
    using V = __m256i;
    static V zero() { return _mm256_setzero_si256(); }
    static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
    static V dpbusd(V acc, V a, V b) { return _mm256_dpbusd_epi32(acc, a, b); }
    static V add(V x, V y) { return _mm256_add_epi32(x, y); }
    static int32_t sum(V v) {
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
        return _mm_cvtsi128_si32(s);
    }
};

}  // namespace

void dot_rows_q8_avx512_vnni(const int8_t* q, size_t cols, const uint8_t* u, size_t n_x, size_t u_stride, int32_t* y,
                             size_t y_stride, size_t o_begin, size_t o_end) {
    dot_rows_q8_blocks<Avx512Vnni>(q, cols, u, n_x, u_stride, y, y_stride, o_begin, o_end);
}

int32_t dot_u8i8_avx512_vnni(const uint8_t* a, const int8_t* b, size_t n) {
    return dot_u8i8_blocks<Avx512Vnni>(a, b, n);
}

}  // namespace stormo::simd
