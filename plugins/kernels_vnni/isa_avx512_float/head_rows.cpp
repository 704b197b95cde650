// The bounded head's cheap pass over int8 rows, and the RAM read probe's loop, on 512-bit
// registers. Neither needs the reference's bits: the head bounds the rounding of any summation
// order (docs/head_bound.md), and an XOR does not depend on how the words are grouped. The avx2
// head loop spends three instructions per 8 weights (widen, convert, multiply-add); here the same
// three cover 16.
#include "avx512_float_kernels.hpp"
#include "simd512.hpp"

namespace stormo::simd::avx512 {
namespace {

// 16 int8 weights at p (the first n when masked), widened exactly to float.
inline __m512 i8x16(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline __m512 i8x16(const int8_t* p, __mmask16 m) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
}

// One row against x. Rows go one at a time, each read front to back, so a thread reads the copy
// as a single stream, which the hardware prefetcher follows best: two rows at a time (sharing the
// loads of x) streamed 19-21 GB/s on two threads, 31-35 with the next pair prefetched, and one row
// at a time 46-48 with no software prefetch, against 51-58 for the RAM probe's loop (a 201088 x
// 2880 copy, 2026-12-02). Four accumulators over 64 values a step (four independent multiply-add
// chains keep the core ahead of memory), then 16-value steps, then a masked tail.
float one_row(const int8_t* a, size_t cols, const float* x) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 64 <= cols; i += 64) {
        a0 = _mm512_fmadd_ps(i8x16(a + i), _mm512_loadu_ps(x + i), a0);
        a1 = _mm512_fmadd_ps(i8x16(a + i + 16), _mm512_loadu_ps(x + i + 16), a1);
        a2 = _mm512_fmadd_ps(i8x16(a + i + 32), _mm512_loadu_ps(x + i + 32), a2);
        a3 = _mm512_fmadd_ps(i8x16(a + i + 48), _mm512_loadu_ps(x + i + 48), a3);
    }
    for (; i + 16 <= cols; i += 16) a0 = _mm512_fmadd_ps(i8x16(a + i), _mm512_loadu_ps(x + i), a0);
    if (i < cols) {
        const __mmask16 m = first16(cols - i);
        a1 = _mm512_fmadd_ps(i8x16(a + i, m), _mm512_maskz_loadu_ps(m, x + i), a1);
    }
    return hsum16(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

}  // namespace

void dot_rows_i8(const int8_t* q, size_t cols, const float* x, float* y, size_t o_begin, size_t o_end) {
    for (size_t o = o_begin; o < o_end; ++o) y[o] = one_row(q + o * cols, cols, x);
}

uint64_t xor_reduce(const void* p, size_t n) {
    // 512 bytes a step into eight independent 64-byte accumulators; the 256-byte tail of a length
    // that is not a multiple of 512 in four more.
    const auto* v = static_cast<const __m512i*>(p);
    const size_t lines = n / 64;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    size_t k = 0;
    for (; k + 8 <= lines; k += 8) {
        a0 = _mm512_xor_si512(a0, _mm512_load_si512(v + k + 0));
        a1 = _mm512_xor_si512(a1, _mm512_load_si512(v + k + 1));
        a2 = _mm512_xor_si512(a2, _mm512_load_si512(v + k + 2));
        a3 = _mm512_xor_si512(a3, _mm512_load_si512(v + k + 3));
        a4 = _mm512_xor_si512(a4, _mm512_load_si512(v + k + 4));
        a5 = _mm512_xor_si512(a5, _mm512_load_si512(v + k + 5));
        a6 = _mm512_xor_si512(a6, _mm512_load_si512(v + k + 6));
        a7 = _mm512_xor_si512(a7, _mm512_load_si512(v + k + 7));
    }
    for (; k < lines; ++k) a0 = _mm512_xor_si512(a0, _mm512_load_si512(v + k));
    const __m512i x = _mm512_xor_si512(_mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3)),
                                       _mm512_xor_si512(_mm512_xor_si512(a4, a5), _mm512_xor_si512(a6, a7)));
    const __m256i y = _mm256_xor_si256(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1));
    const __m128i h = _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
    return static_cast<uint64_t>(_mm_cvtsi128_si64(h)) ^ static_cast<uint64_t>(_mm_extract_epi64(h, 1));
}

}  // namespace stormo::simd::avx512
