#pragma once
// The scalar reference kernels, one function per kernel-table entry. They define the result
// every ISA variant is tested against (docs/kernels.md); reference_kernels() publishes them.
#include <cstddef>
#include <cstdint>

#include "stormo/kernels.hpp"

namespace stormo::reference {

// Matrix kernels (MatmulFn). Accumulation is in float, over ascending input index, one product
// rounded and then added per step (no fused multiply-add), starting from +0.
void matmul_f32_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end);
void matmul_bf16_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end);
void matmul_f16_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end);
void matmul_fp8_e4m3_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                            size_t y_stride, size_t o_begin, size_t o_end);
void matmul_mxfp4_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                         size_t y_stride, size_t o_begin, size_t o_end);
// Every GGUF block format (w.format says which): the row decoded by row_gguf, then the same dot.
void matmul_gguf_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end);
// BF16_PACKED: rows decoded by row_bf16_packed (the BF16 values), then the same dot.
void matmul_bf16_packed_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end);
// The integer road's BF16 activations (KernelTable::matmul_bf16a) for BF16 and BF16_PACKED
// (w.format says which): each x rounded by bf16_activations::round_bits, each weight read through
// bf16_activations::weight_bits, then the same dot (the products are exact). The definition the
// ISA versions are tested against; stormo::matmul runs a table's entry only when a plugin
// replaced this one (docs/kernels.md says why).
void matmul_bf16_pairs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                              size_t y_stride, size_t o_begin, size_t o_end);
void matmul_f32_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end);
void matmul_bf16_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end);
void matmul_f16_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end);

// The integer road (MatmulQ8Fn): MXFP4 against int8 activations, defined in reference_q8.cpp;
// the GGUF block formats against 32-blocks (Q8_0, Q4_0, MXFP4) or Q8_K 256-blocks (the K-quants),
// defined in reference_q8_gguf.cpp.
void matmul_q8_mxfp4_out_in(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                            size_t o_end);
void matmul_q8_gguf_q8_0(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end);
void matmul_q8_gguf_q4_0(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end);
void matmul_q8_gguf_mxfp4(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                          size_t o_end);
void matmul_q8_gguf_q4_k(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end);
void matmul_q8_gguf_q5_k(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end);
void matmul_q8_gguf_q6_k(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end);

// Row decoders (RowToF32Fn), out_in rows.
void row_f32(const WeightView& w, size_t row, float* out);
void row_bf16(const WeightView& w, size_t row, float* out);
void row_f16(const WeightView& w, size_t row, float* out);
void row_mxfp4(const WeightView& w, size_t row, float* out);
void row_fp8_e4m3(const WeightView& w, size_t row, float* out);
void row_gguf(const WeightView& w, size_t row, float* out);  // every GGUF block format
void row_bf16_packed(const WeightView& w, size_t row, float* out);

// Vector kernels.
void rmsnorm(const float* x, const float* weight, size_t n, float eps, float* out);
void softmax(float* x, size_t n);
float dot(const float* a, const float* b, size_t n);
void axpy(float a, const float* x, float* y, size_t n);
void dot_many(const float* q, size_t n_q, size_t q_stride, const float* rows, size_t n_rows, size_t row_stride,
              size_t n, float* scores, size_t scores_stride);
void axpy_many(const float* weights, size_t n_y, size_t weights_stride, const float* rows, size_t n_rows,
               size_t row_stride, size_t n, float* y, size_t y_stride);
void silu(float* x, size_t n);
int32_t dot_u8i8(const uint8_t* a, const int8_t* b, size_t n);

// The bounded head's cheap pass and the RAM probe's loop (reference_head.cpp).
void dot_rows_q8(const int8_t* q, size_t cols, const uint8_t* u, size_t n_x, size_t u_stride, int32_t* y, size_t y_stride,
                 size_t o_begin, size_t o_end);
void dot_rows_i8(const int8_t* q, size_t cols, const float* x, float* y, size_t o_begin, size_t o_end);
uint64_t xor_reduce(const void* p, size_t n);

}  // namespace stormo::reference
