// The bounded head's cheap pass over int8 rows, and the RAM read probe's loop, with AVX2.
// Neither needs the reference's bits: the head bounds the rounding of any summation order
// (docs/head_bound.md), and an XOR does not depend on how the words are grouped.
#include "float_kernels.hpp"
#include "simd.hpp"

namespace stormo::simd {
namespace {

// 8 int8 weights at p, widened exactly to float.
inline __m256 i8x8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// One row against x. Rows go one at a time, each read front to back, so a thread reads the copy
// as a single stream, which the hardware prefetcher follows best (the 512-bit file has the
// figures: two interleaved rows streamed well below one). Four accumulators over 32 values a step,
// then 8-value steps, then scalars.
float one_row(const int8_t* a, size_t cols, const float* x) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        a0 = _mm256_fmadd_ps(i8x8(a + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(i8x8(a + i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(i8x8(a + i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(i8x8(a + i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= cols; i += 8) a0 = _mm256_fmadd_ps(i8x8(a + i), _mm256_loadu_ps(x + i), a0);
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < cols; ++i) sum += static_cast<float>(a[i]) * x[i];
    return sum;
}

}  // namespace

void dot_rows_i8(const int8_t* q, size_t cols, const float* x, float* y, size_t o_begin, size_t o_end) {
    for (size_t o = o_begin; o < o_end; ++o) y[o] = one_row(q + o * cols, cols, x);
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
