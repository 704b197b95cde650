#pragma once
// The integer-road kernels of the vnni plugin (isa/*.cpp, compiled with -mavxvnni).
#include <cstddef>
#include <cstdint>

namespace stormo::simd {

// DotI8Fn through AVX-VNNI's VPDPBUSD: bit-identical to the reference (wrapping 32-bit sum).
int32_t dot_u8i8_vnni(const uint8_t* a, const int8_t* b, size_t n);

}  // namespace stormo::simd
