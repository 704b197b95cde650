#pragma once
// Helpers of the AVX-512 float kernels (compiled with -mavx512f -mavx512bw -mavx512vl only). All
// in an unnamed namespace, for the reason simd.hpp gives: no AVX-512 copy of an inline function
// may ever be picked by the linker for baseline code.
#include "avx512_intrinsics.hpp"

#include <cstddef>
#include <cstdint>

namespace stormo::simd::avx512 {
namespace {

// The first n lanes of 16 (n <= 16).
inline __mmask16 first16(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// Sum of the 16 lanes in one fixed order: 256-bit halves, then 128-bit halves, then pairs, then
// the last two.
inline float hsum16(__m512 v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// 16 BF16 weights widened exactly to float (bits << 16); masked lanes read nothing and give +0.
inline __m512 bf16x16(const uint16_t* p, __mmask16 m) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}
inline __m512 bf16x16(const uint16_t* p) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

inline __m512 f16x16(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
inline __m512 f16x16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Twice the 16 E2M1 values in code order (code 8 is -0, as the reference decodes it). Times the
// block's 2^(s-128) (simd.hpp's kHalfScales) each is the exact product value * 2^(s-127) rounded
// once, the reference's decoded weight, infinities and NaN included.
inline __m512 e2m1_doubled_values() {
    return _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 6.0f, 8.0f, 12.0f, -0.0f, -1.0f, -2.0f, -3.0f, -4.0f,
                          -6.0f, -8.0f, -12.0f);
}

// Rows of x rearranged per 32 values into out (n_x rows of cols, cols a multiple of 32): the 16
// elements `first` picks, then the 16 `second` picks (indices 0-31 into the 32), the order a
// kernel's weight decoder yields its values in.
inline void rearrange_rows32(const float* x, size_t n_x, size_t xs, size_t cols, __m512i first, __m512i second,
                             float* out) {
    for (size_t r = 0; r < n_x; ++r) {
        const float* src = x + r * xs;
        float* dst = out + r * cols;
        for (size_t i = 0; i < cols; i += 32) {
            const __m512 lo = _mm512_loadu_ps(src + i);
            const __m512 hi = _mm512_loadu_ps(src + i + 16);
            _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(lo, first, hi));
            _mm512_storeu_ps(dst + i + 16, _mm512_permutex2var_ps(lo, second, hi));
        }
    }
}

}  // namespace
}  // namespace stormo::simd::avx512
