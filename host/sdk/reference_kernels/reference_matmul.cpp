// The reference matrix kernels: for every output o and input row r, a float accumulator starts
// at +0 and adds W[o, i] * x[r, i] for ascending i, each product rounded before the add. The
// weights are decoded exactly (BF16, F16 and MXFP4 values are all representable in float; an FP8
// value times its block's float scale is rounded once to float, as a dequantized checkpoint holds
// it; a GGUF block is decoded as gguf-py's dequantizer decodes it), so the format changes only how W[o, i] is read, never the arithmetic.
//
// No fused multiply-add, whatever flags the SDK is built with (host/CMakeLists.txt compiles this
// file with -ffp-contract=off): the definition must not change under -march=native.

#include <algorithm>
#include <cstring>
#include <vector>

#include "reference_kernels/reference.hpp"
#include "stormo/bf16_activations.hpp"
#include "stormo/dtype.hpp"

namespace stormo::reference {
namespace {

using RowDecoder = void (*)(const WeightView& w, size_t row, float* out);

// out_in: decode weight row o once, then one dot product per input row.
void matmul_out_in(RowDecoder decode, const WeightView& w, const float* x, size_t n_x,
                   size_t x_stride, float* y, size_t y_stride, size_t o_begin, size_t o_end) {
    std::vector<float> row(w.cols);
    for (size_t o = o_begin; o < o_end; ++o) {
        decode(w, o, row.data());
        for (size_t r = 0; r < n_x; ++r) {
            const float* xr = x + r * x_stride;
            float acc = 0.0f;
            for (size_t i = 0; i < w.cols; ++i) acc += row[i] * xr[i];
            y[r * y_stride + o] = acc;
        }
    }
}

float load_f32(const void* data, size_t k) { return static_cast<const float*>(data)[k]; }
float load_bf16(const void* data, size_t k) { return bf16_to_f32(static_cast<const uint16_t*>(data)[k]); }
float load_f16(const void* data, size_t k) { return f16_to_f32(static_cast<const uint16_t*>(data)[k]); }

// in_out: W[o, i] lives at element i * rows + o. Walking i in the outer loop keeps every output's
// accumulator on the same ascending-i sequence as out_in while reading the matrix row by row.
template <class Load>
void matmul_in_out(Load load, const WeightView& w, const float* x, size_t n_x, size_t x_stride,
                   float* y, size_t y_stride, size_t o_begin, size_t o_end) {
    std::vector<float> acc(o_end - o_begin);
    for (size_t r = 0; r < n_x; ++r) {
        const float* xr = x + r * x_stride;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (size_t i = 0; i < w.cols; ++i) {
            const float xi = xr[i];
            const size_t base = i * w.rows;
            for (size_t o = o_begin; o < o_end; ++o) acc[o - o_begin] += load(w.data, base + o) * xi;
        }
        std::memcpy(y + r * y_stride + o_begin, acc.data(), acc.size() * sizeof(float));
    }
}

}  // namespace

void matmul_f32_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_out_in(row_f32, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_bf16_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_out_in(row_bf16, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_f16_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_out_in(row_f16, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_mxfp4_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                         size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_out_in(row_mxfp4, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_fp8_e4m3_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                            size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_out_in(row_fp8_e4m3, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_gguf_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_out_in(row_gguf, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_bf16_packed_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                               size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_out_in(row_bf16_packed, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

namespace {

// A BF16 row as the pair road's products read it: decoded, each subnormal weight a zero of its sign.
void flush_subnormal_weights(float* out, size_t cols) {
    for (size_t i = 0; i < cols; ++i) {
        uint32_t bits;
        std::memcpy(&bits, out + i, sizeof bits);
        out[i] = bf16_to_f32(bf16_activations::weight_bits(static_cast<uint16_t>(bits >> 16)));
    }
}
void row_bf16_pairs(const WeightView& w, size_t row, float* out) {
    row_bf16(w, row, out);
    flush_subnormal_weights(out, w.cols);
}
void row_bf16_packed_pairs(const WeightView& w, size_t row, float* out) {
    row_bf16_packed(w, row, out);
    flush_subnormal_weights(out, w.cols);
}

}  // namespace

// The rows rounded once, then the float reference's dot over the flushed weights: the road's
// operands are BF16 values, whose products a float holds exactly, so only the adds round.
void matmul_bf16_pairs_out_in(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                              size_t y_stride, size_t o_begin, size_t o_end) {
    std::vector<float> rounded(n_x * w.cols);
    for (size_t r = 0; r < n_x; ++r)
        for (size_t i = 0; i < w.cols; ++i) {
            uint32_t bits;
            std::memcpy(&bits, x + r * x_stride + i, sizeof bits);
            rounded[r * w.cols + i] = bf16_to_f32(bf16_activations::round_bits(bits));
        }
    matmul_out_in(w.format == WeightFormat::BF16_PACKED ? row_bf16_packed_pairs : row_bf16_pairs, w, rounded.data(),
                  n_x, w.cols, y, y_stride, o_begin, o_end);
}

void matmul_f32_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_in_out(load_f32, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_bf16_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                        size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_in_out(load_bf16, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

void matmul_f16_in_out(const WeightView& w, const float* x, size_t n_x, size_t x_stride, float* y,
                       size_t y_stride, size_t o_begin, size_t o_end) {
    matmul_in_out(load_f16, w, x, n_x, x_stride, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::reference
