// The bounded head's cheap pass over int8 rows, and the RAM read probe's loop, with AVX2.
// Neither needs the reference's bits: the head bounds the rounding of any summation order
// (docs/head_bound.md), and an XOR does not depend on how the words are grouped.
#include "float_kernels.hpp"
#include "simd.hpp"
#include "row_pairs.hpp"

namespace stormo::simd {
namespace {

// 8 int8 weights at p, widened exactly to float.
inline __m256 i8x8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Rows a and b against x: two rows per step share every load of x (x is in L1, the rows stream
// from RAM). Four accumulators per row over 32 values a step, then 8-value steps, then scalars.
void two_rows(const int8_t* a, const int8_t* b, size_t cols, const float* x, float* ya, float* yb) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    size_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
        const __m256 x2 = _mm256_loadu_ps(x + i + 16), x3 = _mm256_loadu_ps(x + i + 24);
        a0 = _mm256_fmadd_ps(i8x8(a + i), x0, a0);
        a1 = _mm256_fmadd_ps(i8x8(a + i + 8), x1, a1);
        a2 = _mm256_fmadd_ps(i8x8(a + i + 16), x2, a2);
        a3 = _mm256_fmadd_ps(i8x8(a + i + 24), x3, a3);
        b0 = _mm256_fmadd_ps(i8x8(b + i), x0, b0);
        b1 = _mm256_fmadd_ps(i8x8(b + i + 8), x1, b1);
        b2 = _mm256_fmadd_ps(i8x8(b + i + 16), x2, b2);
        b3 = _mm256_fmadd_ps(i8x8(b + i + 24), x3, b3);
    }
    for (; i + 8 <= cols; i += 8) {
        const __m256 xv = _mm256_loadu_ps(x + i);
        a0 = _mm256_fmadd_ps(i8x8(a + i), xv, a0);
        b0 = _mm256_fmadd_ps(i8x8(b + i), xv, b0);
    }
    float sa = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float sb = hsum(_mm256_add_ps(_mm256_add_ps(b0, b1), _mm256_add_ps(b2, b3)));
    for (; i < cols; ++i) {
        sa += static_cast<float>(a[i]) * x[i];
        sb += static_cast<float>(b[i]) * x[i];
    }
    *ya = sa;
    *yb = sb;
}

}  // namespace

void dot_rows_i8(const int8_t* q, size_t cols, const float* x, float* y, size_t o_begin, size_t o_end) {
    dot_rows_in_pairs(two_rows, q, cols, x, y, o_begin, o_end);
}

uint64_t xor_reduce(const void* p, size_t n) {
    // 256 bytes a step into eight independent 32-byte accumulators: enough loads in flight that
    // the core waits on memory, never on a dependency chain.
    const auto* v = static_cast<const __m256i*>(p);
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t k = 0; k + 8 <= n / 32; k += 8) {
        a0 = _mm256_xor_si256(a0, _mm256_load_si256(v + k + 0));
        a1 = _mm256_xor_si256(a1, _mm256_load_si256(v + k + 1));
        a2 = _mm256_xor_si256(a2, _mm256_load_si256(v + k + 2));
        a3 = _mm256_xor_si256(a3, _mm256_load_si256(v + k + 3));
        a4 = _mm256_xor_si256(a4, _mm256_load_si256(v + k + 4));
        a5 = _mm256_xor_si256(a5, _mm256_load_si256(v + k + 5));
        a6 = _mm256_xor_si256(a6, _mm256_load_si256(v + k + 6));
        a7 = _mm256_xor_si256(a7, _mm256_load_si256(v + k + 7));
    }
    const __m256i x = _mm256_xor_si256(_mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3)),
                                       _mm256_xor_si256(_mm256_xor_si256(a4, a5), _mm256_xor_si256(a6, a7)));
    const __m128i h = _mm_xor_si128(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
    return static_cast<uint64_t>(_mm_cvtsi128_si64(h)) ^ static_cast<uint64_t>(_mm_extract_epi64(h, 1));
}

}  // namespace stormo::simd
