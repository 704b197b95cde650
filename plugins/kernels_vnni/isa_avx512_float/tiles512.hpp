#pragma once
// The tile driver of the 512-bit out_in float matmuls (matmul_out_in.cpp, matmul_gguf_512.cpp): row
// blocks, chunks of outputs, row quads or pairs, tiles of 4 outputs. A kernel K gives
// `template <int O, int R> static void tile(w, o, x, xs, y, ys)`, computing outputs o..o+O-1 for
// the R rows from x into y, each (output, row) pair in the same operations whatever O and R are.
// Unnamed namespace, as every ISA helper (simd512.hpp says why).
#include <cstddef>

#include "simd.hpp"  // input_row_block
#include "stormo/kernels.hpp"

namespace stormo::simd::avx512 {
namespace {

// K::kQuadOutputs where the kernel gives it, else 0 (rows in pairs only).
template <class K>
constexpr int quad_outputs() {
    if constexpr (requires { K::kQuadOutputs; }) return K::kQuadOutputs;
    else return 0;
}

// Outputs [o_begin, o_end) for the R rows from r (R = 1 to 4): tiles of 4 outputs (K::kRowOutputs
// for a lone row, K::kQuadOutputs for three or four rows, then 4 when that is more than 4), single
// outputs for the rest.
template <class K, int R>
void outputs(const WeightView& w, const float* x, size_t xs, float* y, size_t ys, size_t o_begin, size_t o_end) {
    size_t o = o_begin;
    constexpr int kWide = R == 1 ? K::kRowOutputs : R >= 3 ? quad_outputs<K>() : 4;
    if constexpr (kWide > 1)
        for (; o + kWide <= o_end; o += kWide) K::template tile<kWide, R>(w, o, x, xs, y, ys);
    if constexpr (kWide > 4)
        for (; o + 4 <= o_end; o += 4) K::template tile<4, R>(w, o, x, xs, y, ys);
    for (; o < o_end; ++o) K::template tile<1, R>(w, o, x, xs, y, ys);
}

// A kernel K may give kQuadOutputs, the outputs of a tile over four rows (without it, rows go in
// pairs only), and gives kRowOutputs, the outputs of a tile for a lone row (decode): 1, 4, 8 or 16,
// whichever streams fastest. A decode tile is bound by the misses it keeps in flight, and 8 rows
// of weights a tile (with 8 rows prefetched ahead) read one row of x faster than 4 for the small
// per-weight decodes (one thread, 1 GiB set, GB/s, 4 -> 8: transformers' MXFP4 10.2-16.2 -> 20.3-21.5,
// GGUF MXFP4 16.1-17.4 -> 19.2-20.6, Q8_0 10.0-19.9 -> 24.5-25.3, Q4_0 15.6-16.4 -> 16.1-18.7);
// the dense formats gained nothing and the K-quants, whose units hold 4 vectors, lost (Q4_K
// 10.3-11.2 -> 9.0-9.5, Q6_K 9.8-11.2 -> 8.7-10.1). The dense formats take 1: a lone weight row
// is one stream per thread, which the prefetcher follows best (docs/kernels.md). Every (output,
// row) pair sees the same operations in any tile, so the bits do not change.

// Outputs per chunk: their weights stay in L2 while every row pair of a block reads them.
constexpr size_t kOutputChunk = 32;

// Row blocks outermost (about 256 KiB of x, in L2), then chunks of 32 outputs, then quads of rows
// for a kernel that gives kQuadOutputs (MXFP4, FP8, the GGUF blocks; three rows left go in one
// tile too), pairs of rows (a lone last row), then tiles of 4
// outputs x 2 rows (x 4 rows for quads). A tile's input loads serve 4 outputs and
// its weight decodes 2 rows; a row pair stays in L1 while the chunk's tiles read it, and the
// chunk's weights stay in L2 while every pair reads them, so the matrix is read from RAM once per
// row block. Row groups of 8 x 1 output were slower: each multiply-add then needed its own load of
// x from L2, and those loads bounded the loop (MXFP4 64 x 2880 x 8 rows: 45 us a call against 27).
template <class K>
void drive(const WeightView& w, const float* x, size_t n_x, size_t xs, float* y, size_t ys,
           size_t o_begin, size_t o_end) {
    if (n_x == 0 || o_begin >= o_end) return;
    const size_t block = input_row_block(w.cols, n_x, quad_outputs<K>() > 0 ? 4 : 2);
    for (size_t r0 = 0; r0 < n_x; r0 += block) {
        const size_t r_end = r0 + block < n_x ? r0 + block : n_x;
        for (size_t c0 = o_begin; c0 < o_end; c0 += kOutputChunk) {
            const size_t c1 = c0 + kOutputChunk < o_end ? c0 + kOutputChunk : o_end;
            size_t r = r0;
            if constexpr (quad_outputs<K>() > 0) {
                for (; r + 4 <= r_end; r += 4) outputs<K, 4>(w, x + r * xs, xs, y + r * ys, ys, c0, c1);
                // Three rows left (a verify of two drafts, an expert three rows chose): one pass
                // decoding the weights, not a pair's and then a lone row's (MXFP4 3 rows x 5760 x
                // 2880 on 2 threads: 0.57-0.61 ms -> 0.39-0.42; docs/kernels.md).
                if (r + 3 == r_end) {
                    outputs<K, 3>(w, x + r * xs, xs, y + r * ys, ys, c0, c1);
                    r += 3;
                }
            }
            for (; r + 2 <= r_end; r += 2) outputs<K, 2>(w, x + r * xs, xs, y + r * ys, ys, c0, c1);
            if (r < r_end) outputs<K, 1>(w, x + r * xs, xs, y + r * ys, ys, c0, c1);
        }
    }
}

}  // namespace
}  // namespace stormo::simd::avx512
