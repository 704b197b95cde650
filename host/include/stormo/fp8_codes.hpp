#pragma once
// E4M3 codes as a block-scaled FP8 checkpoint holds them, for the synthetic checkpoints and the
// kernel benchmark: weights drawn from a normal distribution, scaled so that a block's largest
// magnitude (about 4.5 standard deviations among a 128 x 128 block's 16384 weights) is E4M3's
// 448, and rounded to the nearest code. Uniform random bytes would be a poor stand-in: their
// magnitudes spread evenly over every exponent, so one byte in 16 is a subnormal, where a
// checkpoint's subnormals are about one in 8000; the kernels decode blocks without subnormals
// faster (docs/kernels.md). In the SDK because both sides use it: the host's `synth` draws the
// codes, a family's FP8 preset sizes its block scales from their RMS.
#include <array>
#include <cstdint>

#include "stormo/export.hpp"

namespace stormo {

// weight_block_size of the hub's -FP8 checkpoints: rows and columns per scale.
constexpr int64_t kFp8CheckpointBlock = 128;

struct E4m3GaussianCodes {
    std::array<uint8_t, 32768> magnitude{};  // inverse CDF of |weight| over codes 0x00-0x7E
    double rms = 0.0;                        // of the drawn codes' values
    // 16 random bits to a code: the low 15 pick the magnitude, the top one the sign.
    uint8_t pick(uint16_t bits) const {
        return static_cast<uint8_t>(magnitude[bits & 0x7FFFu] | ((bits >> 8) & 0x80u));
    }
};

// Built once, on first use.
STORMO_API const E4m3GaussianCodes& e4m3_gaussian_codes();

}  // namespace stormo
