// The integer road's activation quantizer with AVX2, bit for bit the reference's (quantize_q8 in
// the sdk, docs/kernels.md). Every step is one the reference takes, lane by lane: |x| by clearing
// the sign, the block's maximum (exact in any order), d = amax / 127 in scalar as there, x / d
// with a true division, the clamp, and the round-to-even of adding and removing 1.5 * 2^23.
// Lanes past a partial block load as +0, which the reference's zero padding gives them anyway.
// The reference spends about 5 us on a 2880-value row (a division and two branches per value)
// while the other threads wait: on a decode step's 32-block rows that was 18% of an int8 MXFP4
// call of 512 outputs.
#include <cfloat>
#include <cstring>

#include "float_kernels.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

constexpr size_t kLanes = 8;

// Lanes [0, n) of p, +0 in the lanes past n; nothing past p + n is read.
__m256 load_first(const float* p, size_t n) {
    if (n >= kLanes) return _mm256_loadu_ps(p);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane));
}

size_t lanes_left(size_t n, size_t begin) { return n > begin ? n - begin : 0; }

float horizontal_max(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

// 8 values of x divided by d, clamped to [-127, 127] and rounded to even, as int32.
__m256i quantize_lanes(__m256 x, __m256 d) {
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    __m256 v = _mm256_div_ps(x, d);
    v = _mm256_max_ps(_mm256_min_ps(v, _mm256_set1_ps(127.0f)), _mm256_set1_ps(-127.0f));
    return _mm256_cvtps_epi32(_mm256_sub_ps(_mm256_add_ps(v, magic), magic));
}

// n values (n <= block, block a multiple of 32) into one block of q and its scale.
void quantize_block(const float* x, size_t n, size_t block, int8_t* q, float* scale) {
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 largest = _mm256_set1_ps(FLT_MAX);
    __m256 amax = _mm256_setzero_ps();
    __m256 finite = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    for (size_t i = 0; i < n; i += kLanes) {
        const __m256 a = _mm256_and_ps(load_first(x + i, n - i), magnitude);
        finite = _mm256_and_ps(finite, _mm256_cmp_ps(a, largest, _CMP_LE_OQ));  // false for NaN and inf
        amax = _mm256_max_ps(amax, a);
    }
    if (_mm256_movemask_ps(finite) != 0xFF) {
        std::memset(q, 0, block);
        *scale = __builtin_nanf("");
        return;
    }
    const float d = horizontal_max(amax) / 127.0f;
    *scale = d;
    if (d == 0.0f) {
        std::memset(q, 0, block);
        return;
    }
    const __m256 dv = _mm256_set1_ps(d);
    for (size_t i = 0; i < block; i += 4 * kLanes) {
        const __m256i a = quantize_lanes(load_first(x + i, lanes_left(n, i)), dv);
        const __m256i b = quantize_lanes(load_first(x + i + 8, lanes_left(n, i + 8)), dv);
        const __m256i c = quantize_lanes(load_first(x + i + 16, lanes_left(n, i + 16)), dv);
        const __m256i e = quantize_lanes(load_first(x + i + 24, lanes_left(n, i + 24)), dv);
        // The packs work per 128-bit half, so the 4-byte groups come out as a0-3 b0-3 c0-3 e0-3
        // a4-7 b4-7 c4-7 e4-7 (values within range, so the saturation never acts).
        const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, e));
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), _mm256_permutevar8x32_epi32(bytes, order));
    }
}

}  // namespace

void quantize_q8(const float* x, size_t n_x, size_t x_stride, size_t cols, size_t block, int8_t* q, float* scales,
                 int16_t* sums) {
    quantize_q8_blocks(quantize_block, x, n_x, x_stride, cols, block, q, scales, sums);
}

}  // namespace stormo::simd
