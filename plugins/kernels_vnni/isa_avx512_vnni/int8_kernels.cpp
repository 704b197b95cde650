// The int8 dot and GGUF's K-quants (q8_gguf.hpp) on AVX512-VNNI (EVEX vpdpbusd and vpdpwssd on
// 256-bit registers through AVX512VL: Ice Lake, Zen 4 and later); the 32-value block formats of
// this flavour (MXFP4, GGUF's Q8_0, Q4_0, MXFP4) are q8_mxfp4_512.cpp and q8_gguf_512.cpp. Compiled with -mavx2 -mfma -mf16c -mavx512f -mavx512bw
// -mavx512vl -mavx512vnni -ffp-contract=off; selected only where the CPU and OS enable all of them.
#include "avx512_intrinsics.hpp"

#include "dot_u8i8_blocks.hpp"
#include "gguf_decode.hpp"
#include "int8_kernels.hpp"
#include "q8_gguf.hpp"

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
    // q8_gguf.hpp's K-quant step: the pair sums times their scales through vpdpwssd (pmaddwd and
    // the add in one).
    [[gnu::always_inline]] static V scaled(V acc, V u, V s, V w16) {
        return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(u, s), w16);
    }
};

}  // namespace

int32_t dot_u8i8_avx512_vnni(const uint8_t* a, const int8_t* b, size_t n) {
    return dot_u8i8_blocks<Avx512Vnni>(a, b, n);
}

void matmul_q8_gguf_q4_k_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                     size_t o_end) {
    q8g::matmul_q4_k<Avx512Vnni>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q5_k_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                     size_t o_end) {
    q8g::matmul_q5_k<Avx512Vnni>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q6_k_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                     size_t o_end) {
    q8g::matmul_q6_k<Avx512Vnni>(w, x, y, ys, o_begin, o_end);
}

}  // namespace stormo::simd
