// The integer road for GGUF's block formats on AVX2 (MatmulQ8Fn): q8_gguf.hpp's kernels over
// pmaddubsw + pmaddwd, bit-identical to host/sdk/reference_kernels/reference_q8_gguf.cpp.
// Compiled with -ffp-contract=off (CMakeLists.txt): the float steps stay a multiply and an add.
#include <immintrin.h>

#include "avx2_dot.hpp"
#include "gguf_decode.hpp"
#include "q8_gguf.hpp"
#include "q8_kernels.hpp"

namespace stormo::simd {

void matmul_q8_gguf_q8_0_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    q8g::matmul_q8_0<Avx2Dot>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q4_0_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    q8g::matmul_q4_0<Avx2Dot>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_mxfp4_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    q8g::matmul_mxfp4<Avx2Dot>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q4_k_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    q8g::matmul_q4_k<Avx2Dot>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q5_k_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    q8g::matmul_q5_k<Avx2Dot>(w, x, y, ys, o_begin, o_end);
}
void matmul_q8_gguf_q6_k_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end) {
    q8g::matmul_q6_k<Avx2Dot>(w, x, y, ys, o_begin, o_end);
}

}  // namespace stormo::simd
