#pragma once
// The integer road's kernels of the AVX2-class plugins (MatmulQ8Fn). Declared here for the
// baseline table installers; defined in ISA files.
#include <cstddef>

#include "stormo/kernels.hpp"

namespace stormo::simd {

// MXFP4 x int8 on AVX2 (pmaddubsw/pmaddwd): bit-identical to the reference.
void matmul_q8_mxfp4_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                          size_t o_end);

// GGUF's block formats x int8 on AVX2 (matmul_q8_gguf.cpp, q8_gguf.hpp over pmaddubsw): bit-identical
// to the reference. The vnni plugin runs q8_gguf.hpp's loops over vpdpbusd instead.
void matmul_q8_gguf_q8_0_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q4_0_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_mxfp4_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q4_k_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q5_k_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q6_k_avx2(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);

// Fills matmul_q8 for the GGUF block formats (q8_kernel_table.cpp, baseline code: it only stores
// addresses, so it runs safely on any CPU).
void install_q8_gguf_kernels(KernelTable& t);

}  // namespace stormo::simd
