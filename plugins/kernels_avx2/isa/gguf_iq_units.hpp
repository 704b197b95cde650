#pragma once
// The scalar half of decoding ggml's i-quants below 4 bits (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M) for the ISA kernels: for each 32-value unit its two scales (one per 16 values, from
// the block's f16 d: d_bits, at the front but for IQ1_M's, spread over its scale words), its grid
// entries in element order, and the bits of the values to negate (IQ2, IQ3) or the sign of each 8
// values' delta (IQ1). The vector half (gguf_decode.hpp, matmul_gguf_512.cpp) loads the entries,
// widens their bytes and applies scale and sign in the reference's order
// (host/sdk/reference_kernels/gguf_dequant_iq.cpp). Plain integer code with no intrinsics, as
// gguf_scales.hpp; internal linkage, as every ISA helper.
#include <array>
#include <cstddef>
#include <cstdint>

#include "stormo/gguf_iq_grids.hpp"

namespace stormo::simd {
namespace {
namespace gguf {

// The SDK's tables copied into plain arrays of internal linkage: at -O0 std::array's operator[]
// and the SDK's inline variables are weak or unique symbols, which an ISA object must not define
// (tests/isa_weak_symbols.cmake).
template <typename Word, size_t N>
struct IqTable {
    Word v[N];
};
template <typename Word, size_t N>
constexpr IqTable<Word, N> iq_table(const std::array<Word, N>& a) {
    IqTable<Word, N> t{};
    for (size_t i = 0; i < N; ++i) t.v[i] = a[i];
    return t;
}
constexpr auto kIq2XxsGrid = iq_table(iq_grids::kIq2Xxs);
constexpr auto kIq2XsGrid = iq_table(iq_grids::kIq2Xs);
constexpr auto kIq2SGrid = iq_table(iq_grids::kIq2S);
constexpr auto kIq3XxsGrid = iq_table(iq_grids::kIq3Xxs);
constexpr auto kIq3SGrid = iq_table(iq_grids::kIq3S);
constexpr auto kIq1SGrid = iq_table(iq_grids::kIq1S);
constexpr auto kIqSigns = iq_table(iq_grids::kKsigns);
constexpr float kIq1Delta = iq_grids::kIq1Delta;

// A unit's grid entries, as addresses in the tables (one byte a value: unsigned for IQ2 and IQ3,
// int8 for IQ1; four entries of 8 bytes, or for IQ3 eight of 4), so that the vector half loads each
// from its table straight into a vector register, and its sign bits: for IQ2 and IQ3 bit j negates
// value j; for IQ1 bit e makes entry e's delta -1/8.
struct IqUnit {
    const void* entry[8];
    uint32_t signs;
    float dl[2];  // the scales of values 0-15 and 16-31 (the same for the per-32 types)
};

[[gnu::always_inline]] inline uint16_t iq_u16(const uint8_t* p) {
    uint16_t v;
    __builtin_memcpy(&v, p, 2);
    return v;
}
[[gnu::always_inline]] inline uint32_t iq_u32(const uint8_t* p) {
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

// Four 7-bit sign indices (at bits 0, 7, 14, 21) as 32 sign bits.
[[gnu::always_inline]] inline uint32_t iq_ksigns32(uint32_t aux) {
    uint32_t out = 0;
    for (unsigned l = 0; l < 4; ++l) out |= static_cast<uint32_t>(kIqSigns.v[(aux >> (7 * l)) & 0x7Fu]) << (8 * l);
    return out;
}

[[gnu::always_inline]] inline float iq2_scale(float d, unsigned s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

// Scale nibble k of the 8 bytes at p (IQ2_XS's and IQ2_S's per-16 scales).
[[gnu::always_inline]] inline unsigned iq_nibble(const uint8_t* p, unsigned k) { return (p[k / 2] >> (4 * (k % 2))) & 0x0Fu; }

// IQ2_XXS: f16 d, then per 32 values a u32 of four grid bytes and a u32 of sign indices + scale.
struct Iq2XxsBlock {
    static constexpr size_t kBytes = 66, kEntryBytes = 8;
    [[gnu::always_inline]] static uint16_t d_bits(const uint8_t* b) { return iq_u16(b); }
    [[gnu::always_inline]] static IqUnit unit(const uint8_t* b, size_t u, float d) {
        const uint8_t* q = b + 2 + 8 * u;
        IqUnit r;
        r.dl[0] = r.dl[1] = iq2_scale(d, iq_u32(q + 4) >> 28);
        for (unsigned l = 0; l < 4; ++l) r.entry[l] = &kIq2XxsGrid.v[q[l]];
        r.signs = iq_ksigns32(iq_u32(q + 4));
        return r;
    }
};

// IQ2_XS: f16 d, 32 u16 (9-bit grid index, 7-bit sign index), 8 bytes of per-16 scale nibbles.
struct Iq2XsBlock {
    static constexpr size_t kBytes = 74, kEntryBytes = 8;
    [[gnu::always_inline]] static uint16_t d_bits(const uint8_t* b) { return iq_u16(b); }
    [[gnu::always_inline]] static IqUnit unit(const uint8_t* b, size_t u, float d) {
        IqUnit r;
        r.dl[0] = iq2_scale(d, b[66 + u] & 0x0Fu);
        r.dl[1] = iq2_scale(d, b[66 + u] >> 4);
        // One 8-byte load of the unit's four u16: loaded one by one, GCC spilled them as 16-bit
        // stores and reloaded 64 bits, a store-forwarding stall each (3x the time a call).
        uint64_t words;
        __builtin_memcpy(&words, b + 2 + 8 * u, 8);
        r.signs = 0;
        for (unsigned l = 0; l < 4; ++l) {
            const unsigned q = static_cast<unsigned>(words >> (16 * l)) & 0xFFFFu;
            r.entry[l] = &kIq2XsGrid.v[q & 511];
            r.signs |= static_cast<uint32_t>(kIqSigns.v[q >> 9]) << (8 * l);
        }
        return r;
    }
};

// IQ2_S: f16 d, 32 grid bytes, 32 sign bytes, 8 bytes of index bits 8-9, 8 of per-16 scale nibbles.
struct Iq2SBlock {
    static constexpr size_t kBytes = 82, kEntryBytes = 8;
    [[gnu::always_inline]] static uint16_t d_bits(const uint8_t* b) { return iq_u16(b); }
    [[gnu::always_inline]] static IqUnit unit(const uint8_t* b, size_t u, float d) {
        IqUnit r;
        r.dl[0] = iq2_scale(d, b[74 + u] & 0x0Fu);
        r.dl[1] = iq2_scale(d, b[74 + u] >> 4);
        for (unsigned l = 0; l < 4; ++l)
            r.entry[l] = &kIq2SGrid.v[b[2 + 4 * u + l] | ((b[66 + u] >> (2 * l)) & 0x03u) << 8];
        r.signs = iq_u32(b + 34 + 4 * u);
        return r;
    }
};

// IQ3_XXS: f16 d, 64 grid bytes (4 values each), then per 32 values a u32 of sign indices + scale;
// db = d * (0.5 + s) * 0.5.
struct Iq3XxsBlock {
    static constexpr size_t kBytes = 98, kEntryBytes = 4;
    [[gnu::always_inline]] static uint16_t d_bits(const uint8_t* b) { return iq_u16(b); }
    [[gnu::always_inline]] static IqUnit unit(const uint8_t* b, size_t u, float d) {
        const uint8_t* q = b + 2 + 8 * u;
        IqUnit r;
        r.dl[0] = r.dl[1] = d * (0.5f + static_cast<float>(iq_u32(b + 66 + 4 * u) >> 28)) * 0.5f;
        for (unsigned l = 0; l < 4; ++l)
            r.entry[2 * l] = &kIq3XxsGrid.v[q[2 * l]], r.entry[2 * l + 1] = &kIq3XxsGrid.v[q[2 * l + 1]];
        r.signs = iq_ksigns32(iq_u32(b + 66 + 4 * u));
        return r;
    }
};

// IQ3_S: f16 d, 64 grid bytes, 8 bytes of index bit 8, 32 sign bytes, 4 bytes of per-32 scale
// nibbles; db = d * (1 + 2 s).
struct Iq3SBlock {
    static constexpr size_t kBytes = 110, kEntryBytes = 4;
    [[gnu::always_inline]] static uint16_t d_bits(const uint8_t* b) { return iq_u16(b); }
    [[gnu::always_inline]] static IqUnit unit(const uint8_t* b, size_t u, float d) {
        const unsigned high = b[66 + u];
        IqUnit r;
        r.dl[0] = r.dl[1] = d * static_cast<float>(1 + 2 * iq_nibble(b + 106, static_cast<unsigned>(u)));
        for (unsigned e = 0; e < 8; ++e) r.entry[e] = &kIq3SGrid.v[b[2 + 8 * u + e] | ((high >> e) & 1u) << 8];
        r.signs = iq_u32(b + 74 + 4 * u);
        return r;
    }
};

// IQ1_S: f16 d, 32 grid bytes, per 32 values a u16 of index bits 8-10 (entry l's at bits 3l), the
// scale (bits 12-14) and delta's sign (bit 15); dl = d * (2 s + 1).
struct Iq1SBlock {
    static constexpr size_t kBytes = 50, kEntryBytes = 8;
    [[gnu::always_inline]] static uint16_t d_bits(const uint8_t* b) { return iq_u16(b); }
    [[gnu::always_inline]] static IqUnit unit(const uint8_t* b, size_t u, float d) {
        const unsigned qh = iq_u16(b + 34 + 2 * u);
        IqUnit r;
        r.dl[0] = r.dl[1] = d * static_cast<float>(2 * ((qh >> 12) & 7u) + 1);
        for (unsigned l = 0; l < 4; ++l) r.entry[l] = &kIq1SGrid.v[b[2 + 4 * u + l] | ((qh >> (3 * l)) & 7u) << 8];
        r.signs = (qh >> 15) * 0x0Fu;
        return r;
    }
};

// IQ1_M: 32 grid bytes, 16 bytes of a nibble an entry (index bits 8-10, delta's sign), four u16 of
// per-16 3-bit scales whose top nibbles are the f16 d; dl = d * (2 s + 1).
struct Iq1MBlock {
    static constexpr size_t kBytes = 56, kEntryBytes = 8;
    [[gnu::always_inline]] static uint16_t d_bits(const uint8_t* b) {
        return static_cast<uint16_t>((iq_u16(b + 48) >> 12) | (iq_u16(b + 50) >> 8 & 0x00F0u) |
                                     (iq_u16(b + 52) >> 4 & 0x0F00u) | (iq_u16(b + 54) & 0xF000u));
    }
    [[gnu::always_inline]] static IqUnit unit(const uint8_t* b, size_t u, float d) {
        const unsigned sc = iq_u16(b + 48 + 2 * (u / 2)) >> (6 * (u % 2));
        IqUnit r;
        r.dl[0] = d * static_cast<float>(2 * (sc & 7u) + 1);
        r.dl[1] = d * static_cast<float>(2 * ((sc >> 3) & 7u) + 1);
        r.signs = 0;
        for (unsigned l = 0; l < 4; ++l) {
            const unsigned nibble = (b[32 + 2 * u + l / 2] >> (4 * (l % 2))) & 0x0Fu;
            r.entry[l] = &kIq1SGrid.v[b[4 * u + l] | (nibble & 7u) << 8];
            r.signs |= (nibble >> 3) << l;
        }
        return r;
    }
};

}  // namespace gguf
}  // namespace
}  // namespace stormo::simd
