// The bounded head's cheap pass over int8 rows, and the RAM read probe's loop, on 512-bit
// registers. Neither needs the reference's bits: the head bounds the rounding of any summation
// order (docs/head_bound.md), and an XOR does not depend on how the words are grouped. The avx2
// head loop spends three instructions per 8 weights (widen, convert, multiply-add) and kept a core
// below the RAM stream; here the same three cover 16.
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

// Rows a and b against x: two rows share every load of x (x is in L1, the rows stream from RAM).
// Two accumulators per row over 32 values a step, then a 16-value step, then a masked tail.
void two_rows(const int8_t* a, const int8_t* b, size_t cols, const float* x, float* ya, float* yb) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
    size_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        const __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
        a0 = _mm512_fmadd_ps(i8x16(a + i), x0, a0);
        a1 = _mm512_fmadd_ps(i8x16(a + i + 16), x1, a1);
        b0 = _mm512_fmadd_ps(i8x16(b + i), x0, b0);
        b1 = _mm512_fmadd_ps(i8x16(b + i + 16), x1, b1);
    }
    if (i + 16 <= cols) {
        const __m512 xv = _mm512_loadu_ps(x + i);
        a0 = _mm512_fmadd_ps(i8x16(a + i), xv, a0);
        b0 = _mm512_fmadd_ps(i8x16(b + i), xv, b0);
        i += 16;
    }
    if (i < cols) {
        const __mmask16 m = first16(cols - i);
        const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
        a1 = _mm512_fmadd_ps(i8x16(a + i, m), xv, a1);
        b1 = _mm512_fmadd_ps(i8x16(b + i, m), xv, b1);
    }
    *ya = hsum16(_mm512_add_ps(a0, a1));
    *yb = hsum16(_mm512_add_ps(b0, b1));
}

}  // namespace

void dot_rows_i8(const int8_t* q, size_t cols, const float* x, float* y, size_t o_begin, size_t o_end) {
    size_t o = o_begin;
    for (; o + 2 <= o_end; o += 2) {
        // The next pair's rows into L2 while this pair computes: each pair starts two new streams.
        const int8_t* next = q + (o + 2) * cols;
        for (size_t off = 0; off < 2 * cols; off += 64) prefetch_l2(next, off);
        two_rows(q + o * cols, q + (o + 1) * cols, cols, x, y + o, y + o + 1);
    }
    if (o < o_end) {
        float unused = 0.0f;
        two_rows(q + o * cols, q + o * cols, cols, x, y + o, &unused);
    }
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
