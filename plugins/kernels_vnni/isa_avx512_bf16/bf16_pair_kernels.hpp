#pragma once
// The integer road's BF16 activations on AVX512-BF16 (KernelTable::matmul_bf16a, docs/kernels.md):
// BF16 and BF16_PACKED out_in matrices times activations rounded to BF16, two products a float lane
// and instruction (vdpbf16ps) where the float road's FMA makes one. Compiled with the 512-bit float
// flags plus -mavx512bf16 (isa_avx512_bf16/).
#include <cstddef>

#include "stormo/kernels.hpp"

namespace stormo::simd::avx512 {

// Every CPU feature these kernels need, comma-separated.
constexpr const char* kBf16PairFeatures = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512_bf16";

// x is rounded here (bf16_activations::round_bits), once per call; each (row, output) pair takes
// one fixed sequence of operations whatever n_x and the output range are: 32 values a step, even
// steps into one accumulator and odd ones into another (BF16: ascending values; BF16_PACKED: a
// group's two halves as its unpacks give them), then their sum's 16 lanes in simd512.hpp's order.
void matmul_bf16_pairs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                              size_t y_stride, size_t o_begin, size_t o_end);
void matmul_bf16_packed_pairs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                                     size_t y_stride, size_t o_begin, size_t o_end);

// Stores both in `t` (baseline code: called only where the CPU has kBf16PairFeatures).
void install_bf16_pair_kernels(KernelTable& t);

}  // namespace stormo::simd::avx512
