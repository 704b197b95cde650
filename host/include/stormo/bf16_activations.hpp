#pragma once
// The integer road's BF16 activations (docs/kernels.md, "BF16 activations on the integer road"):
// how an activation becomes the BF16 value a BF16 matrix multiplies it by there. Free of std::
// templates and with internal linkage, so ISA files include it (packed_bf16_layout.hpp says why).
#include <cstdint>

namespace stormo::bf16_activations {

// The BF16 bits of the float with bits f, as AVX512-BF16's vcvtne2ps2bf16 gives them: a float
// below 2^-126 in magnitude (zero or subnormal) becomes a zero of its sign, a NaN a quiet NaN of
// its sign and high bits, anything else rounds to nearest, ties to even (to infinity past
// BF16's largest finite value). A normal float never rounds to a subnormal BF16: the exponents
// are float's.
static inline uint16_t round_bits(uint32_t f) {
    if ((f & 0x7F800000u) == 0) return static_cast<uint16_t>((f >> 16) & 0x8000u);
    if ((f & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((f >> 16) | 0x0040u);
    return static_cast<uint16_t>((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
}

// A BF16 weight as the road's products read it: a subnormal one as a zero of its sign (as
// vdpbf16ps reads every subnormal input), every other value as it is.
static inline uint16_t weight_bits(uint16_t w) { return (w & 0x7F80u) == 0 ? static_cast<uint16_t>(w & 0x8000u) : w; }

}  // namespace stormo::bf16_activations
