#pragma once
// MXFP4 (OCP Microscaling FP4) as stored in GPT-OSS checkpoints: a matrix [rows, cols] is held as
// nibble blocks [rows, cols/32, 16] plus one E8M0 scale byte per block [rows, cols/32]. Byte j of a
// block holds element 2j in its low nibble and element 2j+1 in its high nibble. A nibble is E2M1:
// codes 0-7 are {0, .5, 1, 1.5, 2, 3, 4, 6}, codes 8-15 the same values negated. A scale byte s
// means 2^(s-127); s = 255 is NaN (OCP E8M0), so a block scaled by it decodes to NaN throughout.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace stormo::mxfp4 {

inline constexpr size_t kBlockValues = 32;  // values sharing one scale
inline constexpr size_t kBlockBytes = 16;   // two nibbles per byte
inline constexpr uint8_t kNanScale = 255;

inline constexpr float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                    -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

inline float e2m1_value(uint8_t code) { return kE2M1[code & 0x0Fu]; }

inline float e8m0_scale(uint8_t s) {
    if (s == kNanScale) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(s) - 127);
}

// The value of a nibble under its block's scale: the exact product rounded once to float, so
// multiplying by e8m0_scale() equals ldexp (only |value| >= 2^128 rounds, to infinity; the
// smallest magnitude, 0.5 * 2^-127, is an exact subnormal). A NaN scale makes every value NaN.
inline float decode(uint8_t code, uint8_t scale) { return e2m1_value(code) * e8m0_scale(scale); }

// The integer road's view of a block: twice each E2M1 value is an integer in [-12, 12] (exact in
// int8), and the block scale becomes 2^(s-128), so doubled(code) * half_scale(s) == decode(code, s)
// (code 8, -0, becomes integer 0: harmless inside a dot product).
inline constexpr int8_t kE2M1Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(s-128) built from its bits: normal for s >= 2, the subnormals 2^-127 and 2^-128 for s = 1
// and 0, NaN for the E8M0 NaN encoding 255. ISA kernels build the same bits.
inline float half_scale(uint8_t s) {
    uint32_t bits = 0;
    if (s == kNanScale) bits = 0x7FC00000u;
    else if (s >= 2) bits = static_cast<uint32_t>(s - 1) << 23;
    else bits = 0x00200000u << s;
    float f;
    __builtin_memcpy(&f, &bits, sizeof f);
    return f;
}

// The nibble of element `k` (0..31) of a 16-byte block.
inline uint8_t nibble(const uint8_t* block, size_t k) {
    const uint8_t byte = block[k / 2];
    return static_cast<uint8_t>((k % 2 == 0) ? (byte & 0x0Fu) : (byte >> 4));
}

}  // namespace stormo::mxfp4
