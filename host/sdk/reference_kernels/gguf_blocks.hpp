#pragma once
// ggml's block layouts, decoded as gguf-py's reference dequantizer decodes them (gguf_dequant.cpp):
// shared by dequantize_gguf, the reference row decoders and matrix kernels of the GGUF weight
// formats, and the integer road's reference kernels, so every one of them reads a block the same way.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "stormo/dtype.hpp"
#include "stormo/kernels.hpp"

namespace stormo::gguf {

inline constexpr size_t kQK = 32;    // values per block of Q8_0, Q4_0, MXFP4
inline constexpr size_t kQK_K = 256;  // values per super-block of the K-quants

inline uint8_t byte_at(const std::byte* p, size_t i) { return static_cast<uint8_t>(p[i]); }
inline uint16_t u16_at(const std::byte* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}
inline uint32_t u32_at(const std::byte* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline float f16_at(const std::byte* p) { return f16_to_f32(u16_at(p)); }

// Decodes one block into its block_values floats.
using BlockDecoder = void (*)(const std::byte* block, float* out);
void decode_q8_0(const std::byte* b, float* y);
void decode_q4_0(const std::byte* b, float* y);
void decode_q4_k(const std::byte* b, float* y);
void decode_q5_k(const std::byte* b, float* y);
void decode_q6_k(const std::byte* b, float* y);
void decode_mxfp4(const std::byte* b, float* y);
void decode_q4_1(const std::byte* b, float* y);
void decode_q5_0(const std::byte* b, float* y);
void decode_q5_1(const std::byte* b, float* y);
void decode_q2_k(const std::byte* b, float* y);
void decode_q3_k(const std::byte* b, float* y);
void decode_iq4_nl(const std::byte* b, float* y);
void decode_iq4_xs(const std::byte* b, float* y);
// The i-quants below 4 bits (gguf_dequant_iq.cpp).
void decode_iq2_xxs(const std::byte* b, float* y);
void decode_iq2_xs(const std::byte* b, float* y);
void decode_iq2_s(const std::byte* b, float* y);
void decode_iq3_xxs(const std::byte* b, float* y);
void decode_iq3_s(const std::byte* b, float* y);
void decode_iq1_s(const std::byte* b, float* y);
void decode_iq1_m(const std::byte* b, float* y);

// The 6-bit scales and mins of Q4_K and Q5_K: 8 of each packed in 12 bytes (ggml's get_scale_min_k4).
void scale_min_k4(const std::byte* s, uint8_t* sc, uint8_t* m);

// The unsigned integer codes of a block in element order, before scale and offset: 32 nibbles of
// Q4_0's or MXFP4's 16 bytes (qs: the bytes after the scale), 256 values of 4 (Q4_K), 5 (Q5_K) or
// 6 bits (Q6_K, before its -32) from the whole super-block. The float decoders read through them too.
void unpack_nibbles_32(const std::byte* qs, uint8_t* q);
void unpack_q4_k(const std::byte* b, uint8_t* q);
void unpack_q5_k(const std::byte* b, uint8_t* q);
void unpack_q6_k(const std::byte* b, uint8_t* q);
// Q5_0's and Q5_1's 32 five-bit codes: the nibbles of qs as unpack_nibbles_32, bit 4 of element j
// bit j of the little-endian u32 at qh.
void unpack_q5_32(const std::byte* qh, const std::byte* qs, uint8_t* q);

// Byte offsets inside a Q2_K super-block (scales, codes, d, dmin) and a Q3_K one (high-bit masks,
// codes, scales, d).
inline constexpr size_t kQ2KCodes = kQK_K / 16;
inline constexpr size_t kQ2KD = kQ2KCodes + kQK_K / 4;
inline constexpr size_t kQ3KCodes = kQK_K / 8;
inline constexpr size_t kQ3KScales = kQ3KCodes + kQK_K / 4;
inline constexpr size_t kQ3KD = kQ3KScales + 12;
// Q3_K's 16 six-bit scales, each minus 32 (ggml's unpacking of its 12 bytes).
void scales_q3_k(const std::byte* s, int8_t* sc);

// Byte offsets inside a Q6_K super-block: the 16 int8 scales and the f16 d.
inline constexpr size_t kQ6KScales = kQK_K / 2 + kQK_K / 4;
inline constexpr size_t kQ6KD = kQ6KScales + kQK_K / 16;

// 2^(e - 128) as ggml_e8m0_to_fp32_half builds it from its bits (e = 255 gives 2^127, not NaN).
inline float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : uint32_t{e - 1u} << 23;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// Twice each E2M1 value (ggml's kvalues_mxfp4; code 8 is +0).
inline constexpr int8_t kE2M1Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// IQ4_NL's 16 levels (ggml's kvalues_iq4nl).
inline constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Block geometry and decoder of a GGUF weight format; values == 0 for the other formats.
struct BlockFormat {
    size_t values = 0;
    size_t bytes = 0;
    BlockDecoder decode = nullptr;
};
BlockFormat block_format(WeightFormat f);

// The bytes of row `row` of a GGUF-format matrix view.
inline const std::byte* row_blocks(const WeightView& w, size_t row) {
    const BlockFormat bf = block_format(w.format);
    return static_cast<const std::byte*>(w.data) + row * (w.cols / bf.values) * bf.bytes;
}

}  // namespace stormo::gguf
