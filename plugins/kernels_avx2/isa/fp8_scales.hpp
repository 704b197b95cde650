#pragma once
// What the FP8_E4M3 kernels of both plugins share (isa/matmul_fp8.cpp, and the vnni plugin's
// isa_avx512_float/matmul_fp8_512.cpp): the multipliers of their decodes and a tile's choice
// of route. Plain scalar code, in an unnamed namespace as every ISA helper (simd.hpp says why).
#include <cstddef>

#include "stormo/kernels.hpp"

namespace stormo::simd {
namespace {

// A byte shifted onto float's bits is the E4M3 value times 2^-120; times scale * 2^120 it is the
// reference's weight, one rounding of the same real product, while scale * 2^120 is exact, i.e.
// for |scale| < 2^7.
constexpr float kFp8Unscale = 1329227995784915872903807060280344576.0f;  // 2^120
constexpr float kFp8TwoMultiplies = 128.0f;                               // 2^7

// Whether a scale of rows [o, o + n) is finite and at least 2^7 in magnitude, where
// scale * 2^120 could overflow: those tiles multiply by 2^120 (exact) and then by the scale.
inline bool fp8_rows_need_two_multiplies(const WeightView& w, size_t o, size_t n) {
    const size_t grid_cols = (w.cols + w.block_cols - 1) / w.block_cols;
    const size_t first = o / w.block_rows, last = (o + n - 1) / w.block_rows;
    for (size_t g = first * grid_cols; g < (last + 1) * grid_cols; ++g) {
        const float a = w.block_scales[g] < 0 ? -w.block_scales[g] : w.block_scales[g];
        if (a >= kFp8TwoMultiplies && a - a == 0.0f) return true;  // a - a == 0: finite
    }
    return false;
}

// The scale of row o in column block g.
inline float fp8_scale(const WeightView& w, size_t o, size_t g) {
    return w.block_scales[(o / w.block_rows) * ((w.cols + w.block_cols - 1) / w.block_cols) + g];
}

template <bool B>
struct Fp8Flag {
    static constexpr bool value = B;
};

// Calls route(Fp8Flag<two_multiplies>{}, Fp8Flag<nan_codes>{}): a tile's route as compile-time
// flags. Every route gives every weight the same bits, so each tile may pick its own.
template <class Route>
inline void with_fp8_route(bool two_multiplies, bool nan_codes, Route&& route) {
    if (!two_multiplies && !nan_codes) route(Fp8Flag<false>{}, Fp8Flag<false>{});
    else if (!two_multiplies) route(Fp8Flag<false>{}, Fp8Flag<true>{});
    else if (!nan_codes) route(Fp8Flag<true>{}, Fp8Flag<false>{});
    else route(Fp8Flag<true>{}, Fp8Flag<true>{});
}

}  // namespace
}  // namespace stormo::simd
