// The integer road on AVX-VNNI (VEX-encoded vpdpbusd and vpdpwssd: Alder Lake, Zen 5 and later):
// the int8 dot, MXFP4 (q8_mxfp4.hpp) and GGUF's block formats (q8_gguf.hpp). Compiled with
// -mavx2 -mfma -mf16c -mavxvnni -ffp-contract=off, nothing wider: this file must run on CPUs
// without AVX-512.
#include <immintrin.h>

#include "dot_rows_q8_blocks.hpp"
#include "dot_u8i8_blocks.hpp"
#include "gguf_decode.hpp"
#include "int8_kernels.hpp"
#include "q8_gguf.hpp"
#include "q8_mxfp4.hpp"

namespace stormo::simd {
namespace {

struct AvxVnni {
    using V = __m256i;
    static V zero() { return _mm256_setzero_si256(); }
    static V load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
    static V dpbusd(V acc, V a, V b) { return _mm256_dpbusd_avx_epi32(acc, a, b); }
    static V add(V x, V y) { return _mm256_add_epi32(x, y); }
    static int32_t sum(V v) {
        __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
        return _mm_cvtsi128_si32(s);
    }
    static V dot2(V u_even, V s_even, V u_odd, V s_odd) {
        return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u_even, s_even), u_odd, s_odd);
    }
    static V dot1(V u, V s) { return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s); }
    // q8_gguf.hpp's steps: vpdpbusd has no int16 stage, so any unsigned byte is exact; the
    // K-quants' pair sums times their scales go through vpdpwssd (pmaddwd and the add in one).
    static constexpr bool kAnyUnsigned = true;
    [[gnu::always_inline]] static V scaled(V acc, V u, V s, V w16) {
        return _mm256_dpwssd_avx_epi32(acc, _mm256_maddubs_epi16(u, s), w16);
    }
};

}  // namespace

void dot_rows_q8_avx_vnni(const int8_t* q, size_t cols, const uint8_t* u, size_t n_x, size_t u_stride, int32_t* y,
                          size_t y_stride, size_t o_begin, size_t o_end) {
    dot_rows_q8_blocks<AvxVnni>(q, cols, u, n_x, u_stride, y, y_stride, o_begin, o_end);
}

int32_t dot_u8i8_avx_vnni(const uint8_t* a, const int8_t* b, size_t n) { return dot_u8i8_blocks<AvxVnni>(a, b, n); }

void matmul_q8_mxfp4_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                              size_t o_end) {
    q8::matmul_q8_mxfp4<AvxVnni>(w, x, y, y_stride, o_begin, o_end);
}

void matmul_q8_gguf_q8_0_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                  size_t o_end) {
    q8g::matmul_q8_0<AvxVnni>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q4_0_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                  size_t o_end) {
    q8g::matmul_q4_0<AvxVnni>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_mxfp4_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                   size_t o_end) {
    q8g::matmul_mxfp4<AvxVnni>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q4_k_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                  size_t o_end) {
    q8g::matmul_q4_k<AvxVnni>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q5_k_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                  size_t o_end) {
    q8g::matmul_q5_k<AvxVnni>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q6_k_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin,
                                  size_t o_end) {
    q8g::matmul_q6_k<AvxVnni>(w, x, y, ys, o_begin, o_end);
}

}  // namespace stormo::simd
