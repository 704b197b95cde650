#pragma once
// The vnni plugin's float kernels on 512-bit registers, installed over the avx2 ones for the out_in
// layouts wherever the CPU has the features below, whichever VNNI flavour runs the integer road
// (CPUs with AVX-VNNI and AVX-512, such as Zen 5 and Sapphire Rapids, use the VEX flavour there).
// Compiled with -mavx512f -mavx512bw -mavx512vl (isa_avx512_float/). Same contract as every matrix kernel: one fixed sequence of operations per (row,
// output), whatever n_x, o_begin and o_end are; float road, so they differ from the reference
// only in summation order (16 lanes, two accumulators per pair).
#include <cstddef>
#include <cstdint>

#include "stormo/kernels.hpp"

namespace stormo::simd::avx512 {

// Every CPU feature these kernels need, comma-separated.
constexpr const char* kFloatFeatures = "avx2,fma,f16c,avx512f,avx512bw,avx512vl";

void matmul_f32_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end);
void matmul_bf16_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end);
// BF16_PACKED (packed_bf16.cpp): each group decoded in registers, then the BF16 kernel's own
// steps, so its bits are that kernel's.
void matmul_bf16_packed_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
void matmul_f16_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end);
void matmul_mxfp4_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                         size_t y_stride, size_t o_begin, size_t o_end);
// FP8_E4M3 (matmul_fp8_512.cpp): each weight the reference's float (each byte shifted
// onto float's bits, then the block's scale), FMAs.
void matmul_fp8_e4m3_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                            size_t y_stride, size_t o_begin, size_t o_end);

// GGUF's block formats (matmul_gguf_512.cpp): each weight decoded to the reference's exact value
// (table lookups with vpermps for the nibble formats, conversions for Q8_0 and Q6_K), FMAs.
void matmul_gguf_q8_0_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q4_0_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q4_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q5_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q6_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_mxfp4_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                              size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q4_1_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q5_0_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q5_1_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_iq4_nl_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_iq4_xs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_iq2_xxs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_iq2_xs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_iq2_s_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_iq3_xxs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_iq3_s_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_iq1_s_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_iq1_m_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q2_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q3_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);

// DotRowsI8Fn: the bounded head's cheap pass (any summation order; docs/head_bound.md).
void dot_rows_i8(const int8_t* q, size_t cols, const float* x, float* y, size_t o_begin, size_t o_end);

// XorReduceFn: the RAM read probe's loop (n a multiple of 256, p 64-byte aligned).
uint64_t xor_reduce(const void* p, size_t n);

// Attention's many-row kernels (attention_rows.cpp): the bits of the avx2 dot and axpy.
void dot_many(const float* q, size_t n_q, size_t q_stride, const float* rows, size_t n_rows, size_t row_stride,
              size_t n, float* scores, size_t scores_stride);
void axpy_many(const float* weights, size_t n_y, size_t weights_stride, const float* rows, size_t n_rows,
               size_t row_stride, size_t n, float* y, size_t y_stride);

// Replaces the out_in float matmuls (the GGUF formats' included), attention's many-row kernels,
// the head's cheap pass and the RAM probe's loop of `table`
// with the ones above. Baseline code: it only stores
// function addresses.
void install_float_kernels(KernelTable& table);

}  // namespace stormo::simd::avx512
