// The integer road's definition: the activation quantizer and the scalar integer matrix kernel
// every ISA version must match bit for bit (docs/kernels.md, "The integer road").
//
// Per (output o, row r) and 32-block b: an exact int32 sum of doubled-E2M1 weight integers times
// int8 activations, then one float term isum_b * (d[r, b] * 2^(s[o, b] - 128)). The terms go into
// eight float lanes, block b into lane b % 8, each lane adding its blocks in ascending order from
// +0; the lanes are then reduced as ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). That is the
// order an 8-lane vector accumulator and its usual horizontal sum produce, so SIMD kernels meet
// the definition without a scalar tail. No fused multiply-add anywhere (-ffp-contract=off, set by the build).

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "reference_kernels/mxfp4.hpp"
#include "reference_kernels/reference.hpp"

namespace stormo {
namespace {

// Round to nearest, ties to even, for |v| <= 127: adding and removing 1.5 * 2^23 leaves the
// integer the float unit rounds to (every float in [2^23, 2^24) is an integer).
float round_half_even(float v) {
    constexpr float kMagic = 12582912.0f;
    const float shifted = v + kMagic;  // IEEE semantics: no -ffast-math folds this away
    return shifted - kMagic;
}

// n values of x (n <= block) into one block of `block` q values and its scale.
void quantize_block(const float* x, size_t n, size_t block, int8_t* q, float* scale) {
    float amax = 0.0f;
    bool finite = true;
    for (size_t k = 0; k < n; ++k) {
        const float a = std::fabs(x[k]);
        if (!(a <= FLT_MAX)) finite = false;  // NaN or infinity
        else if (a > amax) amax = a;
    }
    std::memset(q, 0, block);
    if (!finite) {
        *scale = std::numeric_limits<float>::quiet_NaN();
        return;
    }
    const float d = amax / 127.0f;
    *scale = d;
    if (d == 0.0f) return;  // all zero, or so small that d underflows: the block contributes 0
    for (size_t k = 0; k < n; ++k) {
        float v = x[k] / d;
        if (v > 127.0f) v = 127.0f;
        if (v < -127.0f) v = -127.0f;
        q[k] = static_cast<int8_t>(round_half_even(v));
    }
}

}  // namespace

void quantize_q8_blocks(QuantizeBlockFn quantize_block, const float* x, size_t n_x, size_t x_stride, size_t cols,
                        size_t block, int8_t* q, float* scales, int16_t* sums) {
    const size_t blocks = (cols + block - 1) / block;
    for (size_t r = 0; r < n_x; ++r) {
        const float* xr = x + r * x_stride;
        for (size_t b = 0; b < blocks; ++b) {
            const size_t begin = b * block;
            const size_t n = cols - begin < block ? cols - begin : block;
            quantize_block(xr + begin, n, block, q + (r * blocks + b) * block, scales + r * blocks + b);
        }
    }
    if (sums == nullptr) return;
    // |sum| <= 16 * 127: an int16.
    const size_t groups = n_x * blocks * block / kQ8SumValues;
    for (size_t g = 0; g < groups; ++g) {
        int sum = 0;
        for (size_t k = 0; k < kQ8SumValues; ++k) sum += q[g * kQ8SumValues + k];
        sums[g] = static_cast<int16_t>(sum);
    }
}

void quantize_q8(const float* x, size_t n_x, size_t x_stride, size_t cols, size_t block, int8_t* q,
                 float* scales, int16_t* sums) {
    quantize_q8_blocks(quantize_block, x, n_x, x_stride, cols, block, q, scales, sums);
}

namespace reference {

void matmul_q8_mxfp4_out_in(const WeightView& w, const Q8Rows& x, float* y, size_t y_stride, size_t o_begin,
                            size_t o_end) {
    const size_t n_blocks = w.cols / mxfp4::kBlockValues;
    const uint8_t* data = static_cast<const uint8_t*>(w.data);
    for (size_t o = o_begin; o < o_end; ++o) {
        const uint8_t* blocks = data + o * n_blocks * mxfp4::kBlockBytes;
        const uint8_t* scales = w.scales + o * n_blocks;
        for (size_t r = 0; r < x.n_x; ++r) {
            const int8_t* q = x.q + r * x.blocks * kQ8Block;
            const float* d = x.scales + r * x.blocks;
            float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (size_t b = 0; b < n_blocks; ++b) {
                const uint8_t* block = blocks + b * mxfp4::kBlockBytes;
                int32_t sum = 0;
                for (size_t k = 0; k < mxfp4::kBlockValues; ++k)
                    sum += mxfp4::kE2M1Doubled[mxfp4::nibble(block, k)] * q[b * kQ8Block + k];
                const float scale = d[b] * mxfp4::half_scale(scales[b]);
                lane[b % 8] = lane[b % 8] + static_cast<float>(sum) * scale;
            }
            y[r * y_stride + o] = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
        }
    }
}

}  // namespace reference
}  // namespace stormo
