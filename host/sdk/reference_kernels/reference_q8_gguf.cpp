// The integer road's definition for the GGUF block formats (docs/kernels.md, "The integer road"):
// the scalar kernels every ISA version must match bit for bit.
//
// Per (output o, row r) and weight block b, an exact int32 block sum of weight integers times
// int8 activations, then one float term; the terms go into eight float lanes, block b into lane
// b % 8, each lane adding its blocks in ascending order from +0, and the lanes are reduced as
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), exactly as for MXFP4 (reference_q8.cpp):
//   Q8_0, Q4_0, MXFP4 (32-blocks against 32-blocks of x, scale dx):
//     isum = sum_k w_k * q_k with w = the int8 (Q8_0), nibble - 8 (Q4_0), doubled E2M1 (MXFP4);
//     term = float(isum) * (dx * dw), dw = the f16 d, or 2^(e - 128) for MXFP4 (255: 2^127).
//   Q4_K, Q5_K (super-blocks of 256 against Q8_K 256-blocks, scale dx, per-16 sums bs):
//     isum = sum_{s<8} sc_s * (sum_{l<32} q_{32s+l} * x_{32s+l});
//     imin = sum_{s<8} m_s * (bs_{2s} + bs_{2s+1});
//     term = float(isum) * (dx * d) - float(imin) * (dx * dmin).
//   Q6_K: isum = sum_{g<16} sc_g * (sum_{l<16} (q_{16g+l} - 32) * x_{16g+l}); term = float(isum) * (dx * d).
// Every integer is exact in int32 (the largest, Q6_K's, is at most 256 * 128 * 32 * 128 = 2^27). No
// fused multiply-add anywhere (-ffp-contract=off, set by the build).
#include <cstddef>
#include <cstdint>
#include <limits>

#include "reference_kernels/gguf_blocks.hpp"
#include "reference_kernels/reference.hpp"

namespace stormo::reference {
namespace {

using gguf::byte_at;
using gguf::f16_at;

// One activation row: its int8 values, block scales and per-16 sums.
struct XRow {
    const int8_t* q;
    const float* d;
    const int16_t* sums;
};

XRow x_row(const Q8Rows& x, size_t r) {
    return {x.q + r * x.blocks * x.block, x.scales + r * x.blocks,
            x.sums != nullptr ? x.sums + r * x.blocks * x.block / kQ8SumValues : nullptr};
}

// The float term of weight block b against activation row xr.
using BlockTerm = float (*)(const std::byte* block, const XRow& xr, size_t b);

float term_q8_0(const std::byte* block, const XRow& xr, size_t b) {
    const int8_t* q = xr.q + b * gguf::kQK;
    int32_t isum = 0;
    for (size_t k = 0; k < gguf::kQK; ++k) isum += static_cast<int8_t>(byte_at(block + 2, k)) * q[k];
    return static_cast<float>(isum) * (xr.d[b] * f16_at(block));
}

// Q4_0 and MXFP4: a scale (f16 d at byte 0, or the E8M0 byte) then 16 bytes of nibbles at kQs,
// each nibble standing for the integer Value(nibble).
int32_t q4_0_value(uint8_t nibble) { return static_cast<int32_t>(nibble) - 8; }
int32_t mxfp4_value(uint8_t nibble) { return gguf::kE2M1Doubled[nibble]; }
float f16_scale(const std::byte* block) { return f16_at(block); }
float e8m0_scale(const std::byte* block) { return gguf::e8m0_half(byte_at(block, 0)); }

template <size_t kQs, int32_t (*Value)(uint8_t), float (*Scale)(const std::byte*)>
float term_nibbles(const std::byte* block, const XRow& xr, size_t b) {
    const int8_t* q = xr.q + b * gguf::kQK;
    uint8_t w[gguf::kQK];
    gguf::unpack_nibbles_32(block + kQs, w);
    int32_t isum = 0;
    for (size_t k = 0; k < gguf::kQK; ++k) isum += Value(w[k]) * q[k];
    return static_cast<float>(isum) * (xr.d[b] * Scale(block));
}

template <void (*Unpack)(const std::byte*, uint8_t*)>
float term_k4_k5(const std::byte* block, const XRow& xr, size_t b) {
    const int8_t* q = xr.q + b * gguf::kQK_K;
    const int16_t* bs = xr.sums + b * gguf::kQK_K / kQ8SumValues;
    uint8_t w[gguf::kQK_K];
    Unpack(block, w);
    uint8_t sc[8], m[8];
    gguf::scale_min_k4(block + 4, sc, m);
    int32_t isum = 0, imin = 0;
    for (size_t s = 0; s < 8; ++s) {
        int32_t sub = 0;
        for (size_t l = 0; l < 32; ++l) sub += w[32 * s + l] * q[32 * s + l];
        isum += sc[s] * sub;
        imin += m[s] * (bs[2 * s] + bs[2 * s + 1]);
    }
    const float dx = xr.d[b];
    return static_cast<float>(isum) * (dx * f16_at(block)) - static_cast<float>(imin) * (dx * f16_at(block + 2));
}

float term_q6_k(const std::byte* block, const XRow& xr, size_t b) {
    const int8_t* q = xr.q + b * gguf::kQK_K;
    uint8_t w[gguf::kQK_K];
    gguf::unpack_q6_k(block, w);
    int32_t isum = 0;
    for (size_t g = 0; g < 16; ++g) {
        int32_t sub = 0;
        for (size_t l = 0; l < 16; ++l) sub += (static_cast<int32_t>(w[16 * g + l]) - 32) * q[16 * g + l];
        isum += static_cast<int8_t>(byte_at(block, gguf::kQ6KScales + g)) * sub;
    }
    return static_cast<float>(isum) * (xr.d[b] * f16_at(block + gguf::kQ6KD));
}

template <BlockTerm Term>
void matmul_q8_blocks(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin, size_t o_end) {
    const gguf::BlockFormat bf = gguf::block_format(w.format);
    const size_t n_blocks = w.cols / bf.values;
    if (!q8_rows_fit(w.format, x)) {
        // Activations quantized for another format: no error channel here, so every output is NaN.
        for (size_t o = o_begin; o < o_end; ++o)
            for (size_t r = 0; r < x.n_x; ++r) y[r * y_stride + o] = std::numeric_limits<float>::quiet_NaN();
        return;
    }
    for (size_t o = o_begin; o < o_end; ++o) {
        const std::byte* blocks = gguf::row_blocks(w, o);
        for (size_t r = 0; r < x.n_x; ++r) {
            const XRow xr = x_row(x, r);
            float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (size_t b = 0; b < n_blocks; ++b) lane[b % 8] = lane[b % 8] + Term(blocks + b * bf.bytes, xr, b);
            y[r * y_stride + o] = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
        }
    }
}

}  // namespace

void matmul_q8_gguf_q8_0(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end) {
    matmul_q8_blocks<term_q8_0>(w, x, y, y_stride, o_begin, o_end);
}
void matmul_q8_gguf_q4_0(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end) {
    matmul_q8_blocks<term_nibbles<2, q4_0_value, f16_scale>>(w, x, y, y_stride, o_begin, o_end);
}
void matmul_q8_gguf_mxfp4(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                          size_t o_end) {
    matmul_q8_blocks<term_nibbles<1, mxfp4_value, e8m0_scale>>(w, x, y, y_stride, o_begin, o_end);
}
void matmul_q8_gguf_q4_k(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end) {
    matmul_q8_blocks<term_k4_k5<gguf::unpack_q4_k>>(w, x, y, y_stride, o_begin, o_end);
}
void matmul_q8_gguf_q5_k(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end) {
    matmul_q8_blocks<term_k4_k5<gguf::unpack_q5_k>>(w, x, y, y_stride, o_begin, o_end);
}
void matmul_q8_gguf_q6_k(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                         size_t o_end) {
    matmul_q8_blocks<term_q6_k>(w, x, y, y_stride, o_begin, o_end);
}

}  // namespace stormo::reference
