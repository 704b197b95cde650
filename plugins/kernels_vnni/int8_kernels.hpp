#pragma once
// The integer-road kernels of the vnni plugin, one set per VNNI flavour: isa_avx_vnni/ (VEX
// vpdpbusd, compiled with -mavxvnni) and isa_avx512_vnni/ (EVEX vpdpbusd on 256-bit registers,
// -mavx512vnni -mavx512vl). Both are bit-identical to the reference; vnni_variant.cpp picks one
// by CPUID when the plugin installs its kernels.
#include <cstddef>
#include <cstdint>

#include "stormo/kernels.hpp"

namespace stormo::simd {

// DotI8Fn: wrapping 32-bit sum, bit-identical to the reference.
int32_t dot_u8i8_avx_vnni(const uint8_t* a, const int8_t* b, size_t n);
int32_t dot_u8i8_avx512_vnni(const uint8_t* a, const int8_t* b, size_t n);

// DotRowsQ8Fn (the bounded head's integer pass), bit-identical to the reference.
void dot_rows_q8_avx_vnni(const int8_t* q, size_t cols, const uint8_t* u, size_t n_x, size_t u_stride, int32_t* y,
                          size_t y_stride, size_t o_begin, size_t o_end);
void dot_rows_q8_avx512_vnni(const int8_t* q, size_t cols, const uint8_t* u, size_t n_x, size_t u_stride, int32_t* y,
                             size_t y_stride, size_t o_begin, size_t o_end);

// MatmulQ8Fn for MXFP4 out_in.
void matmul_q8_mxfp4_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                              size_t o_end);
void matmul_q8_mxfp4_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride,
                                 size_t o_begin, size_t o_end);

// MatmulQ8Fn for GGUF's block formats (q8_gguf.hpp over each flavour's vpdpbusd and vpdpwssd).
void matmul_q8_gguf_q8_0_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q4_0_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_mxfp4_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q4_k_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q5_k_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q6_k_avx_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q8_0_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q4_0_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_mxfp4_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q4_k_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q5_k_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);
void matmul_q8_gguf_q6_k_avx512_vnni(const WeightView& w, const Q8Rows& x, float* y, size_t ys, size_t o_begin, size_t o_end);

}  // namespace stormo::simd
