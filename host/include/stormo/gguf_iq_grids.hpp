#pragma once
// The lattice grids of ggml's i-quants below 4 bits, in the shape decoders load them: an entry of
// an IQ2 grid is 8 bytes (value j in byte j: 8, 25 or 43), of an IQ3 grid 4 bytes (4 ... 62 for
// IQ3_XXS, 1 ... 15 for IQ3_S), of the IQ1 grid 8 signed bytes (-1, 0 or 1). The entries' codes
// come from gguf-py (stormo/gguf_iq_grid_codes.hpp, written by scripts/make-iq-grids.py); the
// tables are expanded from them at compile time, so the reference decoders and the kernel plugins
// read one definition.
#include <array>
#include <cstddef>
#include <cstdint>

#include "stormo/gguf_iq_grid_codes.hpp"

namespace stormo::iq_grids {

inline constexpr std::array<uint8_t, 3> kIq2Map{0x08, 0x19, 0x2b};
inline constexpr std::array<uint8_t, 8> kIq3XxsMap{0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3e};
inline constexpr std::array<uint8_t, 8> kIq3SMap{0x01, 0x03, 0x05, 0x07, 0x09, 0x0b, 0x0d, 0x0f};
inline constexpr std::array<uint8_t, 3> kIq1Map{0xff, 0x00, 0x01};  // -1, 0, 1 as int8

// Entry i of a grid whose Values values of width log2(map size) are packed in codes[i].
template <typename Word, size_t Values, size_t N, size_t M>
constexpr std::array<Word, N> expand(const std::array<uint16_t, N>& codes, const std::array<uint8_t, M>& map) {
    constexpr unsigned width = M <= 4 ? 2 : 3;
    std::array<Word, N> out{};
    for (size_t i = 0; i < N; ++i)
        for (size_t j = 0; j < Values; ++j)
            out[i] |= static_cast<Word>(map[(codes[i] >> (width * j)) & ((1u << width) - 1)]) << (8 * j);
    return out;
}

inline constexpr auto kIq2Xxs = expand<uint64_t, 8>(kIq2XxsCodes, kIq2Map);
inline constexpr auto kIq2Xs = expand<uint64_t, 8>(kIq2XsCodes, kIq2Map);
inline constexpr auto kIq2S = expand<uint64_t, 8>(kIq2SCodes, kIq2Map);
inline constexpr auto kIq3Xxs = expand<uint32_t, 4>(kIq3XxsCodes, kIq3XxsMap);
inline constexpr auto kIq3S = expand<uint32_t, 4>(kIq3SCodes, kIq3SMap);
inline constexpr auto kIq1S = expand<uint64_t, 8>(kIq1SCodes, kIq1Map);

// ggml's ksigns_iq2xs: 7 stored sign bits and an eighth that makes their count even (IQ2_XXS,
// IQ2_XS, IQ3_XXS); bit j set negates value j of 8. A table, so that no decoder needs popcnt.
constexpr std::array<uint8_t, 128> make_ksigns() {
    std::array<uint8_t, 128> t{};
    for (unsigned s = 0; s < 128; ++s) {
        unsigned ones = 0;
        for (unsigned b = s; b != 0; b >>= 1) ones += b & 1u;
        t[s] = static_cast<uint8_t>(s | (ones & 1u) << 7);
    }
    return t;
}
inline constexpr std::array<uint8_t, 128> kKsigns = make_ksigns();
constexpr uint8_t ksigns(unsigned seven_bits) { return kKsigns[seven_bits & 0x7F]; }

// IQ1_S's and IQ1_M's offset: each value is scale * (grid + delta), delta = +-1/8.
inline constexpr float kIq1Delta = 0.125f;

}  // namespace stormo::iq_grids
