#pragma once
// The scalar parts of a GGUF block the ISA kernels read (gguf_decode.hpp, q8_gguf.hpp): MXFP4's
// scale and the packed 6-bit scales and mins of Q4_K / Q5_K. Plain integer code with no
// intrinsics, so the unit tests can include it beside SIMDe. Internal linkage, as every ISA helper.
#include <cstdint>

namespace stormo::simd {
namespace {
namespace gguf {

// 2^(e - 128) as ggml_e8m0_to_fp32_half builds it (e = 255 is 2^127).
[[gnu::always_inline]] constexpr float e8m0_half(uint8_t e8) {
    const uint32_t e = e8;
    return __builtin_bit_cast(float, e < 2 ? uint32_t{0x00200000} << e : (e - 1u) << 23);
}

// e8m0_half of every byte, for a broadcast from memory (the 512-bit float kernel's per-block scale).
struct E8m0HalfTable {
    float value[256];
};
constexpr E8m0HalfTable make_e8m0_half_table() {
    E8m0HalfTable t{};
    for (unsigned e = 0; e < 256; ++e) t.value[e] = e8m0_half(static_cast<uint8_t>(e));
    return t;
}
constexpr E8m0HalfTable kE8m0Half = make_e8m0_half_table();

// The 8 six-bit scales and 8 mins of a Q4_K / Q5_K super-block (ggml's get_scale_min_k4 on the
// 12 bytes at b + 4), four at a time in 32-bit words: bytes 0-3 hold scales 0-3 in their low six
// bits, bytes 4-7 mins 0-3, and bytes 8-11 the low four bits of scales 4-7 (low nibble) and mins
// 4-7 (high nibble), whose top two bits are the top bits of bytes 0-3 and 4-7.
[[gnu::always_inline]] inline void scales_mins_k4(const uint8_t* b, uint64_t& sc, uint64_t& m) {
    uint32_t w[3];
    __builtin_memcpy(w, b + 4, 12);
    const uint32_t low6 = 0x3F3F3F3Fu, low4 = 0x0F0F0F0Fu, low2 = 0x03030303u;
    const uint32_t s[2] = {w[0] & low6, (w[2] & low4) | (((w[0] >> 6) & low2) << 4)};
    const uint32_t n[2] = {w[1] & low6, ((w[2] >> 4) & low4) | (((w[1] >> 6) & low2) << 4)};
    // In registers, little-endian: byte j is scale (min) j. A vector load of a pair of 32-bit
    // stores would wait for store forwarding to fail.
    sc = uint64_t{s[0]} | uint64_t{s[1]} << 32;
    m = uint64_t{n[0]} | uint64_t{n[1]} << 32;
}
[[gnu::always_inline]] inline void scales_mins_k4(const uint8_t* b, uint8_t sc[8], uint8_t m[8]) {
    uint64_t s, n;
    scales_mins_k4(b, s, n);
    __builtin_memcpy(sc, &s, 8);
    __builtin_memcpy(m, &n, 8);
}

// IQ4_XS's scale of sub-block j (j < 8), minus 32: nibble j % 2 of byte 4 + j / 2, with bits 2j of
// the u16 at byte 2 as bits 4-5.
[[gnu::always_inline]] inline int iq4_xs_scale(const uint8_t* b, int j) {
    const unsigned high = static_cast<unsigned>(b[2]) | static_cast<unsigned>(b[3]) << 8;
    const unsigned low = (b[4 + j / 2] >> (4 * (j % 2))) & 0x0Fu;
    return static_cast<int>(low | ((high >> (2 * j)) & 0x03u) << 4) - 32;
}

}  // namespace gguf
}  // namespace
}  // namespace stormo::simd
