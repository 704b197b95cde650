#pragma once
// How out_in matrix kernels walk their work (the tile shapes are the kernel's business): input rows
// in blocks that stay in L2, each weight row read once per block, groups of 4 rows, and for the last
// 1-3 rows wider output tiles. A kernel K supplies
//   template <int O, int R> static void K::tile(w, o, x, xs, y, ys)
// computing outputs [o, o + O) for rows x[0..R) (stride xs) into y (stride ys); every (output, row)
// value must come from the same operations whatever tile shape computed it. Internal linkage, as
// every helper of the ISA files (simd.hpp says why).
#include <cstddef>

#include "simd.hpp"
#include "stormo/kernels.hpp"

namespace stormo::simd {
namespace {

// 1 to 3 rows: more outputs per tile when fewer rows share each weight load.
template <class K>
void few_rows(const WeightView& w, const float* x, size_t xs, float* y, size_t ys, size_t rows,
              size_t o_begin, size_t o_end) {
    size_t o = o_begin;
    if (rows == 3) {
        for (; o < o_end; ++o) K::template tile<1, 3>(w, o, x, xs, y, ys);
    } else if (rows == 2) {
        for (; o + 2 <= o_end; o += 2) K::template tile<2, 2>(w, o, x, xs, y, ys);
        for (; o < o_end; ++o) K::template tile<1, 2>(w, o, x, xs, y, ys);
    } else {
        for (; o + 4 <= o_end; o += 4) K::template tile<4, 1>(w, o, x, xs, y, ys);
        for (; o < o_end; ++o) K::template tile<1, 1>(w, o, x, xs, y, ys);
    }
}

// Row blocks outermost; inside a block each weight row is read once and applied to every group
// of 4 rows while it sits in L1; the last 1-3 rows of a block use the wider output tiles.
template <class K>
void drive(const WeightView& w, const float* x, size_t n_x, size_t xs, float* y, size_t ys,
           size_t o_begin, size_t o_end) {
    if (n_x == 0 || o_begin >= o_end) return;
    const size_t block = input_row_block(w.cols, n_x);
    for (size_t r0 = 0; r0 < n_x; r0 += block) {
        const size_t r_end = r0 + block < n_x ? r0 + block : n_x;
        const size_t full_end = r0 + (r_end - r0) / 4 * 4;
        for (size_t o = o_begin; o < o_end; ++o)
            for (size_t r = r0; r < full_end; r += 4)
                K::template tile<1, 4>(w, o, x + r * xs, xs, y + r * ys, ys);
        if (full_end < r_end)
            few_rows<K>(w, x + full_end * xs, xs, y + full_end * ys, ys, r_end - full_end, o_begin,
                        o_end);
    }
}

}  // namespace
}  // namespace stormo::simd
