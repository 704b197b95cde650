// The reference dequantization of GGUF's block types, bit for bit as gguf-py's gguf.quants computes
// it (numpy in float32: each product rounded before the next operation, hence -ffp-contract=off in
// host/CMakeLists.txt). The block layouts are ggml's (ggml-common.h); the comments give each
// value's formula in the order gguf-py evaluates it.
#include <cstring>
#include <string>

#include "reference_kernels/gguf_blocks.hpp"
#include "stormo/dtype.hpp"
#include "stormo/gguf_types.hpp"

namespace stormo::gguf {

// Q8_0: f16 d, then 32 int8 q; x = q * d.
void decode_q8_0(const std::byte* b, float* y) {
    const float d = f16_at(b);
    for (size_t i = 0; i < 32; ++i) y[i] = static_cast<float>(static_cast<int8_t>(byte_at(b + 2, i))) * d;
}

// Q4_0: f16 d, then 16 bytes; element j < 16 is the low nibble of byte j, element j + 16 its high
// nibble (MXFP4's 16 bytes after its scale byte are laid out alike).
void unpack_nibbles_32(const std::byte* qs, uint8_t* q) {
    for (size_t j = 0; j < 16; ++j) {
        q[j] = byte_at(qs, j) & 0x0F;
        q[j + 16] = byte_at(qs, j) >> 4;
    }
}

// Q4_0: x = d * (q - 8).
void decode_q4_0(const std::byte* b, float* y) {
    const float d = f16_at(b);
    uint8_t q[32];
    unpack_nibbles_32(b + 2, q);
    for (size_t j = 0; j < 32; ++j) y[j] = d * static_cast<float>(static_cast<int>(q[j]) - 8);
}

void scale_min_k4(const std::byte* s, uint8_t* sc, uint8_t* m) {
    for (size_t j = 0; j < 4; ++j) {
        sc[j] = byte_at(s, j) & 0x3F;
        m[j] = byte_at(s, j + 4) & 0x3F;
        sc[j + 4] = (byte_at(s, j + 8) & 0x0F) | ((byte_at(s, j) >> 2) & 0x30);
        m[j + 4] = (byte_at(s, j + 8) >> 4) | ((byte_at(s, j + 4) >> 2) & 0x30);
    }
}

// Q4_K and Q5_K: f16 d, f16 dmin, 12 bytes of scales/mins, then (Q5_K only) 32 bytes qh, then 128
// bytes of nibbles. Sub-block 2c takes the low nibbles of bytes [32c, 32c + 32), sub-block 2c + 1
// their high nibbles; Q5_K's fifth bit of sub-block s's element l is bit s of qh[l].
template <bool kFifthBit>
void unpack_k4_k5(const std::byte* b, uint8_t* q) {
    const std::byte* qh = b + 16;
    const std::byte* qs = kFifthBit ? b + 48 : b + 16;
    for (size_t s = 0; s < 8; ++s) {
        const size_t chunk = s / 2, shift = 4 * (s % 2);
        for (size_t l = 0; l < 32; ++l) {
            unsigned v = (byte_at(qs, 32 * chunk + l) >> shift) & 0x0F;
            if constexpr (kFifthBit) v |= ((byte_at(qh, l) >> s) & 0x01u) << 4;
            q[32 * s + l] = static_cast<uint8_t>(v);
        }
    }
}
void unpack_q4_k(const std::byte* b, uint8_t* q) { unpack_k4_k5<false>(b, q); }
void unpack_q5_k(const std::byte* b, uint8_t* q) { unpack_k4_k5<true>(b, q); }

namespace {

// x = (d * sc) * q - dmin * m, per sub-block of 32.
void decode_k4_k5(const std::byte* b, const uint8_t* q, float* y) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    uint8_t sc[8], m[8];
    scale_min_k4(b + 4, sc, m);
    for (size_t s = 0; s < 8; ++s) {
        const float ds = d * static_cast<float>(sc[s]);
        const float dm = dmin * static_cast<float>(m[s]);
        for (size_t l = 0; l < 32; ++l) y[32 * s + l] = ds * static_cast<float>(q[32 * s + l]) - dm;
    }
}

}  // namespace

void decode_q4_k(const std::byte* b, float* y) {
    uint8_t q[kQK_K];
    unpack_q4_k(b, q);
    decode_k4_k5(b, q, y);
}

void decode_q5_k(const std::byte* b, float* y) {
    uint8_t q[kQK_K];
    unpack_q5_k(b, q);
    decode_k4_k5(b, q, y);
}

// Q6_K: 128 bytes ql, 64 bytes qh, 16 int8 scales, f16 d. In each half c of 128 values, group
// 2s + h (32 values) takes nibble s of ql[64c + 32h + l] and bits 2(2s + h) of qh[32c + l].
void unpack_q6_k(const std::byte* b, uint8_t* q) {
    const std::byte* ql = b;
    const std::byte* qh = b + kQK_K / 2;
    for (size_t c = 0; c < 2; ++c)
        for (size_t g = 0; g < 4; ++g) {
            const size_t s = g / 2, h = g % 2;
            for (size_t l = 0; l < 32; ++l) {
                const unsigned low = (byte_at(ql, 64 * c + 32 * h + l) >> (4 * s)) & 0x0F;
                const unsigned high = (byte_at(qh, 32 * c + l) >> (2 * g)) & 0x03;
                q[128 * c + 32 * g + l] = static_cast<uint8_t>(low | (high << 4));
            }
        }
}

// Q6_K: x = (d * scale[i / 16]) * (q - 32).
void decode_q6_k(const std::byte* b, float* y) {
    const std::byte* scales = b + kQ6KScales;
    const float d = f16_at(b + kQ6KD);
    uint8_t q[kQK_K];
    unpack_q6_k(b, q);
    for (size_t i = 0; i < kQK_K; ++i) {
        const float ds = d * static_cast<float>(static_cast<int8_t>(byte_at(scales, i / 16)));
        y[i] = ds * static_cast<float>(static_cast<int>(q[i]) - 32);
    }
}

// MXFP4 as GGUF stores it: one E8M0 byte e, then 16 bytes; element j < 16 is the low nibble of
// byte j, element j + 16 the high nibble. The value is twice the E2M1 value times 2^(e - 128),
// built from its bits as ggml_e8m0_to_fp32_half does (e = 255 gives 2^127, not NaN).
void decode_mxfp4(const std::byte* b, float* y) {
    const float d = e8m0_half(byte_at(b, 0));
    uint8_t q[32];
    unpack_nibbles_32(b + 1, q);
    for (size_t j = 0; j < 32; ++j) y[j] = d * static_cast<float>(kE2M1Doubled[q[j]]);
}

// Q4_1: f16 d, f16 m, then nibbles as Q4_0's; x = (d * q) + m.
void decode_q4_1(const std::byte* b, float* y) {
    const float d = f16_at(b), m = f16_at(b + 2);
    uint8_t q[32];
    unpack_nibbles_32(b + 4, q);
    for (size_t j = 0; j < 32; ++j) y[j] = d * static_cast<float>(q[j]) + m;
}

void unpack_q5_32(const std::byte* qh, const std::byte* qs, uint8_t* q) {
    const uint32_t high = u32_at(qh);
    unpack_nibbles_32(qs, q);
    for (size_t j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(q[j] | ((high >> j) & 1u) << 4);
}

// Q5_0: f16 d, 4 bytes qh, 16 bytes qs; x = d * (q - 16).
void decode_q5_0(const std::byte* b, float* y) {
    const float d = f16_at(b);
    uint8_t q[32];
    unpack_q5_32(b + 2, b + 6, q);
    for (size_t j = 0; j < 32; ++j) y[j] = d * static_cast<float>(static_cast<int>(q[j]) - 16);
}

// Q5_1: f16 d, f16 m, 4 bytes qh, 16 bytes qs; x = (d * q) + m.
void decode_q5_1(const std::byte* b, float* y) {
    const float d = f16_at(b), m = f16_at(b + 2);
    uint8_t q[32];
    unpack_q5_32(b + 4, b + 8, q);
    for (size_t j = 0; j < 32; ++j) y[j] = d * static_cast<float>(q[j]) + m;
}

// Q2_K: 16 bytes of scales (low nibble) and mins (high nibble), one of each per 16 values, 64 bytes
// of codes, f16 d, f16 dmin. In each half c of 128 values, group s (32 values) takes bits 2s of
// qs[32c + l]; x = (d * scale) * q - (dmin * min).
void decode_q2_k(const std::byte* b, float* y) {
    const float d = f16_at(b + kQ2KD), dmin = f16_at(b + kQ2KD + 2);
    for (size_t g = 0; g < 16; ++g) {
        const float dl = d * static_cast<float>(byte_at(b, g) & 0x0F);
        const float ml = dmin * static_cast<float>(byte_at(b, g) >> 4);
        for (size_t i = 16 * g; i < 16 * g + 16; ++i) {
            const size_t c = i / 128, s = i % 128 / 32, l = i % 32;
            const unsigned q = (byte_at(b + kQ2KCodes, 32 * c + l) >> (2 * s)) & 0x03;
            y[i] = dl * static_cast<float>(q) - ml;
        }
    }
}

// Scale k < 8 takes the low nibble of byte k, k >= 8 the high nibble of byte k - 8, and bits 4-5
// from bits 2(k / 4) of byte 8 + k % 4.
void scales_q3_k(const std::byte* s, int8_t* sc) {
    for (size_t k = 0; k < 16; ++k) {
        const unsigned low = (byte_at(s, k % 8) >> (4 * (k / 8))) & 0x0F;
        const unsigned high = (byte_at(s, 8 + k % 4) >> (2 * (k / 4))) & 0x03;
        sc[k] = static_cast<int8_t>(static_cast<int>(low | high << 4) - 32);
    }
}

// Q3_K: 32 bytes hmask, 64 bytes of codes, 12 bytes of scales, f16 d. Element i = 128c + 32s + l
// takes bits 2s of qs[32c + l] as its low two bits, and loses 4 when bit i / 32 of hmask[l] is 0;
// x = (d * scale[i / 16]) * q, q in [-4, 3].
void decode_q3_k(const std::byte* b, float* y) {
    const float d = f16_at(b + kQ3KD);
    int8_t sc[16];
    scales_q3_k(b + kQ3KScales, sc);
    for (size_t g = 0; g < 16; ++g) {
        const float dl = d * static_cast<float>(sc[g]);
        for (size_t i = 16 * g; i < 16 * g + 16; ++i) {
            const size_t c = i / 128, s = i % 128 / 32, l = i % 32;
            const int low = (byte_at(b + kQ3KCodes, 32 * c + l) >> (2 * s)) & 0x03;
            const int high = (byte_at(b, l) >> (i / 32)) & 0x01;
            y[i] = dl * static_cast<float>(low - 4 * (1 - high));
        }
    }
}

// IQ4_NL: f16 d, then nibbles as Q4_0's; x = d * kvalues[q].
void decode_iq4_nl(const std::byte* b, float* y) {
    const float d = f16_at(b);
    uint8_t q[32];
    unpack_nibbles_32(b + 2, q);
    for (size_t j = 0; j < 32; ++j) y[j] = d * static_cast<float>(kIq4NlValues[q[j]]);
}

// IQ4_XS: f16 d, u16 scales_h, 4 bytes scales_l, then 8 sub-blocks of 32 as IQ4_NL's 16 bytes of
// nibbles. Sub-block j's scale is nibble j % 2 of scales_l[j / 2] with bits 2j of scales_h as bits
// 4-5, minus 32; x = (d * scale) * kvalues[q].
void decode_iq4_xs(const std::byte* b, float* y) {
    const float d = f16_at(b);
    const unsigned high = static_cast<unsigned>(byte_at(b, 2)) | static_cast<unsigned>(byte_at(b, 3)) << 8;
    for (size_t j = 0; j < 8; ++j) {
        const unsigned low = (byte_at(b + 4, j / 2) >> (4 * (j % 2))) & 0x0F;
        const int scale = static_cast<int>(low | ((high >> (2 * j)) & 0x03) << 4) - 32;
        const float dl = d * static_cast<float>(scale);
        uint8_t q[32];
        unpack_nibbles_32(b + 8 + 16 * j, q);
        for (size_t l = 0; l < 32; ++l) y[32 * j + l] = dl * static_cast<float>(kIq4NlValues[q[l]]);
    }
}

BlockFormat block_format(WeightFormat f) {
    switch (f) {
        case WeightFormat::GGUF_Q8_0: return {kQK, 34, decode_q8_0};
        case WeightFormat::GGUF_Q4_0: return {kQK, 18, decode_q4_0};
        case WeightFormat::GGUF_Q4_K: return {kQK_K, 144, decode_q4_k};
        case WeightFormat::GGUF_Q5_K: return {kQK_K, 176, decode_q5_k};
        case WeightFormat::GGUF_Q6_K: return {kQK_K, 210, decode_q6_k};
        case WeightFormat::GGUF_MXFP4: return {kQK, 17, decode_mxfp4};
        case WeightFormat::GGUF_Q4_1: return {kQK, 20, decode_q4_1};
        case WeightFormat::GGUF_Q5_0: return {kQK, 22, decode_q5_0};
        case WeightFormat::GGUF_Q5_1: return {kQK, 24, decode_q5_1};
        case WeightFormat::GGUF_Q2_K: return {kQK_K, 84, decode_q2_k};
        case WeightFormat::GGUF_Q3_K: return {kQK_K, 110, decode_q3_k};
        case WeightFormat::GGUF_IQ4_NL: return {kQK, 18, decode_iq4_nl};
        case WeightFormat::GGUF_IQ4_XS: return {kQK_K, 136, decode_iq4_xs};
        case WeightFormat::GGUF_IQ2_XXS: return {kQK_K, 66, decode_iq2_xxs};
        case WeightFormat::GGUF_IQ2_XS: return {kQK_K, 74, decode_iq2_xs};
        case WeightFormat::GGUF_IQ2_S: return {kQK_K, 82, decode_iq2_s};
        case WeightFormat::GGUF_IQ3_XXS: return {kQK_K, 98, decode_iq3_xxs};
        case WeightFormat::GGUF_IQ3_S: return {kQK_K, 110, decode_iq3_s};
        case WeightFormat::GGUF_IQ1_S: return {kQK_K, 50, decode_iq1_s};
        case WeightFormat::GGUF_IQ1_M: return {kQK_K, 56, decode_iq1_m};
        case WeightFormat::F32:
        case WeightFormat::BF16:
        case WeightFormat::F16:
        case WeightFormat::MXFP4:
        case WeightFormat::FP8_E4M3:
        case WeightFormat::BF16_PACKED:
        case WeightFormat::count: break;
    }
    return {};
}

}  // namespace stormo::gguf

namespace stormo {

WeightBlock gguf_weight_block(WeightFormat f) {
    const gguf::BlockFormat bf = gguf::block_format(f);
    return {bf.values, bf.bytes};
}

std::optional<WeightFormat> gguf_weight_format(GgufType type) {
    switch (type) {
        case GgufType::F32: return WeightFormat::F32;
        case GgufType::F16: return WeightFormat::F16;
        case GgufType::BF16: return WeightFormat::BF16;
        case GgufType::Q8_0: return WeightFormat::GGUF_Q8_0;
        case GgufType::Q4_0: return WeightFormat::GGUF_Q4_0;
        case GgufType::Q4_K: return WeightFormat::GGUF_Q4_K;
        case GgufType::Q5_K: return WeightFormat::GGUF_Q5_K;
        case GgufType::Q6_K: return WeightFormat::GGUF_Q6_K;
        case GgufType::MXFP4: return WeightFormat::GGUF_MXFP4;
        case GgufType::Q4_1: return WeightFormat::GGUF_Q4_1;
        case GgufType::Q5_0: return WeightFormat::GGUF_Q5_0;
        case GgufType::Q5_1: return WeightFormat::GGUF_Q5_1;
        case GgufType::Q2_K: return WeightFormat::GGUF_Q2_K;
        case GgufType::Q3_K: return WeightFormat::GGUF_Q3_K;
        case GgufType::IQ4_NL: return WeightFormat::GGUF_IQ4_NL;
        case GgufType::IQ4_XS: return WeightFormat::GGUF_IQ4_XS;
        case GgufType::IQ2_XXS: return WeightFormat::GGUF_IQ2_XXS;
        case GgufType::IQ2_XS: return WeightFormat::GGUF_IQ2_XS;
        case GgufType::IQ2_S: return WeightFormat::GGUF_IQ2_S;
        case GgufType::IQ3_XXS: return WeightFormat::GGUF_IQ3_XXS;
        case GgufType::IQ3_S: return WeightFormat::GGUF_IQ3_S;
        case GgufType::IQ1_S: return WeightFormat::GGUF_IQ1_S;
        case GgufType::IQ1_M: return WeightFormat::GGUF_IQ1_M;
        default: break;
    }
    return std::nullopt;
}

}  // namespace stormo

namespace stormo {

Expected<void> dequantize_gguf(GgufType type, const std::byte* blocks, size_t n_values, float* out) {
    const auto info = gguf_type_info(static_cast<uint32_t>(type));
    if (!info) return fail(ErrorKind::invalid_argument, "dequantize: unknown GGUF type " + std::to_string(static_cast<uint32_t>(type)));
    if (n_values % info->block_values != 0)
        return fail(ErrorKind::invalid_argument, "dequantize: " + std::to_string(n_values) + " values are not a whole number of " +
                                                     std::string(info->name) + " blocks of " +
                                                     std::to_string(info->block_values));
    // A tensor with a zero dimension has no bytes and may come with null pointers (an empty
    // vector's data()), which memcpy must not be given even for zero bytes.
    if (n_values == 0) return {};
    switch (type) {
        case GgufType::F32:
            std::memcpy(out, blocks, n_values * 4);
            return {};
        case GgufType::F16:
            for (size_t i = 0; i < n_values; ++i) out[i] = gguf::f16_at(blocks + 2 * i);
            return {};
        case GgufType::BF16:
            for (size_t i = 0; i < n_values; ++i) out[i] = bf16_to_f32(gguf::u16_at(blocks + 2 * i));
            return {};
        default: break;
    }
    const std::optional<WeightFormat> format = gguf_weight_format(type);
    const gguf::BlockDecoder fn = format ? gguf::block_format(*format).decode : nullptr;
    if (fn == nullptr)
        return fail(ErrorKind::unsupported, "dequantize: GGUF type " + std::string(info->name) +
                                                " has no reference dequantizer in stormo (F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
                                                "Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, "
                                                "IQ3_S, IQ4_NL, IQ4_XS and MXFP4 have)");
    const size_t n_blocks = n_values / info->block_values;
    for (size_t i = 0; i < n_blocks; ++i) fn(blocks + i * info->block_bytes, out + i * info->block_values);
    return {};
}

}  // namespace stormo
