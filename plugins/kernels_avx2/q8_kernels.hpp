#pragma once
// The integer road's kernels of the AVX2-class plugins (MatmulQ8Fn). Declared here for the
// baseline table installers; defined in ISA files.
#include <cstddef>

#include "stormo/kernels.hpp"

namespace stormo::simd {

// MXFP4 x int8 on AVX2 (pmaddubsw/pmaddwd): bit-identical to the reference.
void matmul_q8_mxfp4_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                          size_t o_end);

}  // namespace stormo::simd
