#pragma once
// The float kernels of the AVX2-class plugins. The ISA files (isa/*.cpp) are compiled with the
// plugin's SIMD flags; each plugin .so gets its own copy, hidden from every other library.
// Every matrix kernel keeps the contract of kernels.hpp: each (row, output) value is computed by
// one fixed sequence of operations, whatever n_x, o_begin and o_end are.
#include <cstddef>
#include <cstdint>

#include "stormo/kernels.hpp"

namespace stormo::simd {

// MatmulFn. out_in: 8-lane partial sums with fused multiply-adds, two accumulators per (output,
// row), reduced in a fixed order; MXFP4 sums each block's integer-valued weights times x, then
// adds that sum times the block scale (docs/kernels.md). in_out: one fused multiply-add chain per
// output over ascending input index.
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
// FP8_E4M3 (matmul_fp8.cpp): each weight the reference's float (each byte shifted
// onto float's bits, then the block's scale), FMAs.
void matmul_fp8_e4m3_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                            size_t y_stride, size_t o_begin, size_t o_end);
void matmul_mxfp4_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                         size_t y_stride, size_t o_begin, size_t o_end);
void matmul_f32_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end);
void matmul_bf16_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end);
void matmul_f16_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end);

// GGUF block formats (matmul_gguf.cpp): each 32-value unit decoded in registers to the
// reference's exact weights, then fused multiply-adds into two 8-lane accumulators.
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
void matmul_gguf_q2_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                             size_t y_stride, size_t o_begin, size_t o_end);
void matmul_gguf_q3_k_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
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

// RowToF32Fn: exact, bit-identical to the reference.
void row_bf16(const WeightView& w, size_t row, float* out);
void row_f16(const WeightView& w, size_t row, float* out);
void row_mxfp4(const WeightView& w, size_t row, float* out);
void row_gguf_q8_0(const WeightView& w, size_t row, float* out);
void row_gguf_q4_0(const WeightView& w, size_t row, float* out);
void row_gguf_q4_k(const WeightView& w, size_t row, float* out);
void row_gguf_q5_k(const WeightView& w, size_t row, float* out);
void row_gguf_q6_k(const WeightView& w, size_t row, float* out);
void row_gguf_mxfp4(const WeightView& w, size_t row, float* out);
void row_gguf_q4_1(const WeightView& w, size_t row, float* out);
void row_gguf_q5_0(const WeightView& w, size_t row, float* out);
void row_gguf_q5_1(const WeightView& w, size_t row, float* out);
void row_gguf_q2_k(const WeightView& w, size_t row, float* out);
void row_gguf_q3_k(const WeightView& w, size_t row, float* out);
void row_gguf_iq4_nl(const WeightView& w, size_t row, float* out);
void row_gguf_iq4_xs(const WeightView& w, size_t row, float* out);
void row_gguf_iq2_xxs(const WeightView& w, size_t row, float* out);
void row_gguf_iq2_xs(const WeightView& w, size_t row, float* out);
void row_gguf_iq2_s(const WeightView& w, size_t row, float* out);
void row_gguf_iq3_xxs(const WeightView& w, size_t row, float* out);
void row_gguf_iq3_s(const WeightView& w, size_t row, float* out);
void row_gguf_iq1_s(const WeightView& w, size_t row, float* out);
void row_gguf_iq1_m(const WeightView& w, size_t row, float* out);

// Vector kernels: sums in 8 lanes (a different order than the reference's ascending sum).
void rmsnorm(const float* x, const float* weight, size_t n, float eps, float* out);
float dot(const float* a, const float* b, size_t n);
void softmax(float* x, size_t n);
void axpy(float a, const float* x, float* y, size_t n);
void dot_many(const float* q, size_t n_q, size_t q_stride, const float* rows, size_t n_rows, size_t row_stride,
              size_t n, float* scores, size_t scores_stride);
void axpy_many(const float* weights, size_t n_y, size_t weights_stride, const float* rows, size_t n_rows,
               size_t row_stride, size_t n, float* y, size_t y_stride);

// The bounded head's cheap pass (DotRowsI8Fn) and the RAM probe's loop (XorReduceFn).
void dot_rows_i8(const int8_t* q, size_t cols, const float* x, float* y, size_t o_begin, size_t o_end);
uint64_t xor_reduce(const void* p, size_t n);

// The integer road's activation quantizer (QuantizeQ8Fn), the reference's bits.
void quantize_q8(const float* x, size_t n_x, size_t x_stride, size_t cols, size_t block, int8_t* q, float* scales,
                 int16_t* sums);

// Fills the table entries above (baseline code, safe to call on any CPU); the host tells who
// provides an entry by comparing it with the reference.
void install_float_kernels(KernelTable& table);

}  // namespace stormo::simd
