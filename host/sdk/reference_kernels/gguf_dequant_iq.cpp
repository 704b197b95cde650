// The reference dequantization of ggml's i-quants below 4 bits (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S, IQ1_S, IQ1_M), bit for bit as gguf-py's gguf.quants computes it: numpy in float32, each
// operation rounded before the next (hence -ffp-contract=off in host/CMakeLists.txt). Each value
// is a grid entry's value (stormo/gguf_iq_grids.hpp) times a sub-block scale, then times +-1 (the
// IQ2 and IQ3 types) or, for IQ1, the scale times (grid value + delta). The comments give the
// formulas in gguf-py's order of evaluation.
#include "reference_kernels/gguf_blocks.hpp"
#include "stormo/gguf_iq_grids.hpp"

namespace stormo::gguf {
namespace {

// Value j of a grid entry of one byte a value.
template <typename Word>
float grid_value(Word entry, size_t j) {
    return static_cast<float>(static_cast<uint8_t>(entry >> (8 * j)));
}

// +1 or -1 as bit j of a sign byte says.
float sign_of(uint8_t signs, size_t j) { return (signs >> j) & 1u ? -1.0f : 1.0f; }

// The IQ2 and IQ3 types' 8 values of a grid-entry pair or one 8-entry: (db * grid) * sign.
template <typename Word>
void signed_values(float db, const Word* entries, size_t values_per_entry, uint8_t signs, float* y) {
    for (size_t j = 0; j < 8; ++j)
        y[j] = db * grid_value(entries[j / values_per_entry], j % values_per_entry) * sign_of(signs, j);
}

// The IQ2 scales: db = d * (0.5 + s) * 0.25.
float iq2_scale(float d, unsigned s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

}  // namespace

// IQ2_XXS: f16 d, then per sub-block of 32 two u32: four grid indices (one byte each), and four
// 7-bit sign indices with the scale in bits 28-31.
void decode_iq2_xxs(const std::byte* b, float* y) {
    const float d = f16_at(b);
    for (size_t s = 0; s < 8; ++s) {
        const std::byte* q = b + 2 + 8 * s;
        const uint32_t aux = u32_at(q + 4);
        const float db = iq2_scale(d, aux >> 28);
        for (size_t l = 0; l < 4; ++l) {
            const uint64_t entry = iq_grids::kIq2Xxs[byte_at(q, l)];
            signed_values(db, &entry, 8, iq_grids::ksigns(aux >> (7 * l)), y + 32 * s + 8 * l);
        }
    }
}

// IQ2_XS: f16 d, 32 u16 (a 9-bit grid index, a 7-bit sign index), 8 bytes of two 4-bit scales
// each, one per 16 values.
void decode_iq2_xs(const std::byte* b, float* y) {
    const float d = f16_at(b);
    for (size_t g = 0; g < 32; ++g) {
        const unsigned q = u16_at(b + 2 + 2 * g);
        const float db = iq2_scale(d, (byte_at(b + 66, g / 4) >> (4 * ((g / 2) % 2))) & 0x0F);
        const uint64_t entry = iq_grids::kIq2Xs[q & 511];
        signed_values(db, &entry, 8, iq_grids::ksigns(q >> 9), y + 8 * g);
    }
}

// IQ2_S: f16 d, 32 bytes of grid indices' low bits, 32 sign bytes, 8 bytes of their two high bits
// (entry g's in bits 2 (g % 4) of byte g / 4), 8 bytes of two 4-bit scales, one per 16 values.
void decode_iq2_s(const std::byte* b, float* y) {
    const float d = f16_at(b);
    for (size_t g = 0; g < 32; ++g) {
        const unsigned high = (byte_at(b + 66, g / 4) >> (2 * (g % 4))) & 0x03;
        const float db = iq2_scale(d, (byte_at(b + 74, g / 4) >> (4 * ((g / 2) % 2))) & 0x0F);
        const uint64_t entry = iq_grids::kIq2S[byte_at(b + 2, g) | high << 8];
        signed_values(db, &entry, 8, byte_at(b + 34, g), y + 8 * g);
    }
}

// IQ3_XXS: f16 d, 64 grid indices (4 values each), then per sub-block of 32 a u32 of four 7-bit
// sign indices and the scale in bits 28-31; db = d * (0.5 + s) * 0.5.
void decode_iq3_xxs(const std::byte* b, float* y) {
    const float d = f16_at(b);
    for (size_t s = 0; s < 8; ++s) {
        const uint32_t aux = u32_at(b + 66 + 4 * s);
        const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
        for (size_t l = 0; l < 4; ++l) {
            const uint32_t entries[2] = {iq_grids::kIq3Xxs[byte_at(b + 2, 8 * s + 2 * l)],
                                         iq_grids::kIq3Xxs[byte_at(b + 2, 8 * s + 2 * l + 1)]};
            signed_values(db, entries, 4, iq_grids::ksigns(aux >> (7 * l)), y + 32 * s + 8 * l);
        }
    }
}

// IQ3_S: f16 d, 64 bytes of grid indices' low bits, 8 bytes of their ninth bits (entry g's bit
// g % 8 of byte g / 8), 32 sign bytes, 4 bytes of two 4-bit scales, one per 32 values;
// db = d * (1 + 2 s).
void decode_iq3_s(const std::byte* b, float* y) {
    const float d = f16_at(b);
    for (size_t s = 0; s < 8; ++s) {
        const float db = d * static_cast<float>(1 + 2 * ((byte_at(b + 106, s / 2) >> (4 * (s % 2))) & 0x0F));
        for (size_t l = 0; l < 4; ++l) {
            uint32_t entries[2];
            for (size_t e = 0; e < 2; ++e) {
                const size_t g = 8 * s + 2 * l + e;
                entries[e] = iq_grids::kIq3S[byte_at(b + 2, g) | ((byte_at(b + 66, g / 8) >> (g % 8)) & 1u) << 8];
            }
            signed_values(db, entries, 4, byte_at(b + 74, 4 * s + l), y + 32 * s + 8 * l);
        }
    }
}

namespace {

// IQ1_S's and IQ1_M's 8 values of one grid entry: dl * (grid + delta).
void iq1_values(float dl, unsigned index, bool negative_delta, float* y) {
    const float delta = negative_delta ? -iq_grids::kIq1Delta : iq_grids::kIq1Delta;
    const uint64_t entry = iq_grids::kIq1S[index];
    for (size_t j = 0; j < 8; ++j)
        y[j] = dl * (static_cast<float>(static_cast<int8_t>(static_cast<uint8_t>(entry >> (8 * j)))) + delta);
}

}  // namespace

// IQ1_S: f16 d, 32 bytes of grid indices' low bits, then per sub-block of 32 a u16: the indices'
// three high bits (entry l's at bits 3l), the scale in bits 12-14, delta's sign in bit 15;
// dl = d * (2 s + 1).
void decode_iq1_s(const std::byte* b, float* y) {
    const float d = f16_at(b);
    for (size_t s = 0; s < 8; ++s) {
        const unsigned qh = u16_at(b + 34 + 2 * s);
        const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
        for (size_t l = 0; l < 4; ++l)
            iq1_values(dl, byte_at(b + 2, 4 * s + l) | ((qh >> (3 * l)) & 7) << 8, (qh & 0x8000) != 0,
                       y + 32 * s + 8 * l);
    }
}

// IQ1_M: 32 bytes of grid indices' low bits, 16 bytes of a nibble an entry (three high index bits,
// delta's sign in bit 3; entry g's nibble g % 2 of byte g / 2), four u16: three-bit scales in bits
// 0-11 (scale k of u16 k / 4 at bits 3 (k % 4), one per 16 values), the f16 d in their top
// nibbles (bits 12-15 of u16 i are d's bits 4i..4i+3); dl = d * (2 s + 1).
void decode_iq1_m(const std::byte* b, float* y) {
    uint16_t sc[4];
    for (size_t i = 0; i < 4; ++i) sc[i] = u16_at(b + 48 + 2 * i);
    const uint16_t d_bits = static_cast<uint16_t>((sc[0] >> 12) | (sc[1] >> 8 & 0x00F0) | (sc[2] >> 4 & 0x0F00) |
                                                  (sc[3] & 0xF000));
    const float d = f16_to_f32(d_bits);
    for (size_t g = 0; g < 32; ++g) {
        const size_t k = g / 2;
        const float dl = d * static_cast<float>(2 * ((sc[k / 4] >> (3 * (k % 4))) & 7) + 1);
        const unsigned nibble = (byte_at(b + 32, g / 2) >> (4 * (g % 2))) & 0x0F;
        iq1_values(dl, byte_at(b, g) | (nibble & 7) << 8, (nibble & 8) != 0, y + 8 * g);
    }
}

}  // namespace stormo::gguf
