#pragma once
// The bounded head's integer cheap pass (DotRowsQ8Fn, docs/head_bound.md), written once over a
// VNNI flavour's `Ops` (dot_u8i8_blocks.hpp lists what Ops gives). Per weight row, 32 weights a
// step: one vpdpbusd per activation row, and one against a vector of ones that sums the weights,
// so sum_i q_i (u_i - 128) = sum_i q_i u_i - 128 sum_i q_i needs no per-row table. Up to eight
// activation rows share each load of the weights. Integer sums wrap modulo 2^32 whatever their
// order and the true value fits 32 bits for the columns the contract allows, so every blocking
// gives the reference's bits.
#include <cstddef>
#include <cstdint>

namespace stormo::simd {
namespace {

alignas(32) constexpr uint8_t kOnes32[32] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                             1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

template <class Ops, int R>
void q8_rows_tile(const int8_t* q, size_t cols, const uint8_t* u, size_t us, int32_t* y, size_t ys) {
    typename Ops::V acc[R];
    typename Ops::V weights = Ops::zero();
    const typename Ops::V ones = Ops::load(kOnes32);
    for (int r = 0; r < R; ++r) acc[r] = Ops::zero();
    size_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        const typename Ops::V w = Ops::load(q + i);
        weights = Ops::dpbusd(weights, ones, w);
        for (int r = 0; r < R; ++r) acc[r] = Ops::dpbusd(acc[r], Ops::load(u + r * us + i), w);
    }
    uint32_t weight_sum = static_cast<uint32_t>(Ops::sum(weights));
    uint32_t sums[R];
    for (int r = 0; r < R; ++r) sums[r] = static_cast<uint32_t>(Ops::sum(acc[r]));
    for (; i < cols; ++i) {
        weight_sum += static_cast<uint32_t>(static_cast<int32_t>(q[i]));
        for (int r = 0; r < R; ++r)
            sums[r] += static_cast<uint32_t>(static_cast<int32_t>(u[r * us + i]) * static_cast<int32_t>(q[i]));
    }
    for (int r = 0; r < R; ++r) y[r * ys] = static_cast<int32_t>(sums[r] - 128u * weight_sum);
}

template <class Ops>
void dot_rows_q8_blocks(const int8_t* q, size_t cols, const uint8_t* u, size_t n_x, size_t u_stride, int32_t* y,
                        size_t y_stride, size_t o_begin, size_t o_end) {
    for (size_t o = o_begin; o < o_end; ++o) {
        const int8_t* row = q + o * cols;
        size_t r = 0;
        for (; r + 8 <= n_x; r += 8) q8_rows_tile<Ops, 8>(row, cols, u + r * u_stride, u_stride, y + r * y_stride + o, y_stride);
        if (r + 4 <= n_x) {
            q8_rows_tile<Ops, 4>(row, cols, u + r * u_stride, u_stride, y + r * y_stride + o, y_stride);
            r += 4;
        }
        if (r + 2 <= n_x) {
            q8_rows_tile<Ops, 2>(row, cols, u + r * u_stride, u_stride, y + r * y_stride + o, y_stride);
            r += 2;
        }
        if (r < n_x) q8_rows_tile<Ops, 1>(row, cols, u + r * u_stride, u_stride, y + r * y_stride + o, y_stride);
    }
}

}  // namespace
}  // namespace stormo::simd
