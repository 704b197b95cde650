#pragma once
// The row loop of the integer road's kernels, free of intrinsics, so the loops that the tests also
// build over SIMDe (q8_mxfp4.hpp) can include it. Unnamed namespace, as every ISA helper (simd.hpp
// says why).
#include <cstddef>

namespace stormo::simd {
namespace {

// Rows [r0, r1) in tiles of 4 rows, the last 1-3 in one tile: tile.template operator()<R>(r) for
// each, R its rows from r (the row loop of the integer road's kernels).
template <class Tile>
[[gnu::always_inline]] inline void row_tiles(size_t r0, size_t r1, Tile&& tile) {
    size_t r = r0;
    for (; r + 4 <= r1; r += 4) tile.template operator()<4>(r);
    switch (r1 - r) {
        case 3: tile.template operator()<3>(r); break;
        case 2: tile.template operator()<2>(r); break;
        case 1: tile.template operator()<1>(r); break;
        default: break;
    }
}

}  // namespace
}  // namespace stormo::simd
