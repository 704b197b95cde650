#pragma once
// The byte dot steps of the AVX2 integer-road kernels (q8_mxfp4.hpp's and q8_gguf.hpp's Dot):
// pmaddubsw (pairs of u8 x s8 products into int16) then pmaddwd. pmaddubsw saturates a pair
// beyond 2^15 - 1, so each caller keeps its unsigned bytes small enough (q8_mxfp4.hpp: at most
// 24; q8_gguf.hpp: at most 63, or |w| <= 128 against activations other than -128).
// Internal linkage, as every ISA helper.
#include <immintrin.h>

namespace stormo::simd {
namespace {

struct Avx2Dot {
    static constexpr bool kAnyUnsigned = false;
    [[gnu::always_inline]] static __m256i dot2(__m256i u_even, __m256i s_even, __m256i u_odd, __m256i s_odd) {
        const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(u_even, s_even), _mm256_maddubs_epi16(u_odd, s_odd));
        return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
    }
    [[gnu::always_inline]] static __m256i dot1(__m256i u, __m256i s) {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
    }
    [[gnu::always_inline]] static __m256i scaled(__m256i acc, __m256i u, __m256i s, __m256i w16) {
        return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), w16));
    }
};

}  // namespace
}  // namespace stormo::simd
