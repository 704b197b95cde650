// The integer road's MXFP4 x int8 kernel on AVX2: each 4-byte dot step is pmaddubsw (pairs of
// u8 x s8 products into int16, exact: biased weights are at most 24, so a pair is at most
// 2 * 24 * 128 and two pairs added 4 * 24 * 128 < 2^15) then pmaddwd by ones.
// Compiled with -ffp-contract=off (CMakeLists.txt): the float steps must stay a multiply and an
// add, as in the reference.
#include <immintrin.h>

#include "avx2_dot.hpp"
#include "q8_kernels.hpp"
#include "q8_mxfp4.hpp"

namespace stormo::simd {

void matmul_q8_mxfp4_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                          size_t o_end) {
    q8::matmul_q8_mxfp4<Avx2Dot>(w, x, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::simd
