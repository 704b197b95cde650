#pragma once
// The bounded head's cheap-pass driver, shared by the ISA files: rows in pairs, so each pair shares
// its loads of x (x is in L1, the rows stream from RAM), the next pair's rows asked into L2 before
// this pair computes (each pair starts two new streams), a lone last row paired with itself.
// Internal linkage: each ISA file instantiates it with its own flags and its own two_rows.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace stormo::simd {
namespace {

template <class TwoRows>
inline void dot_rows_in_pairs(TwoRows two_rows, const int8_t* q, size_t cols, const float* x, float* y,
                              size_t o_begin, size_t o_end) {
    size_t o = o_begin;
    for (; o + 2 <= o_end; o += 2) {
        const char* next = reinterpret_cast<const char*>(q + (o + 2) * cols);
        for (size_t off = 0; off < 2 * cols; off += 64) _mm_prefetch(next + off, _MM_HINT_T1);
        two_rows(q + o * cols, q + (o + 1) * cols, cols, x, y + o, y + o + 1);
    }
    if (o < o_end) {
        float unused = 0.0f;
        two_rows(q + o * cols, q + o * cols, cols, x, y + o, &unused);
    }
}

}  // namespace
}  // namespace stormo::simd
