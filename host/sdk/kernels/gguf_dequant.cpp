// The reference dequantization of GGUF's block types, bit for bit as gguf-py's gguf.quants computes
// it (numpy in float32: each product rounded before the next operation, hence -ffp-contract=off in
// host/CMakeLists.txt). The block layouts are ggml's (ggml-common.h); the comments give each
// value's formula in the order gguf-py evaluates it.
#include <bit>
#include <cstring>
#include <string>

#include "stormo/dtype.hpp"
#include "stormo/gguf_types.hpp"

namespace stormo {
namespace {

constexpr size_t QK_K = 256;

uint16_t u16_at(const std::byte* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

float f16_at(const std::byte* p) { return f16_to_f32(u16_at(p)); }

uint8_t byte_at(const std::byte* p, size_t i) { return static_cast<uint8_t>(p[i]); }

// Q8_0: f16 d, then 32 int8 q; x = q * d.
void q8_0(const std::byte* b, float* y) {
    const float d = f16_at(b);
    for (size_t i = 0; i < 32; ++i) y[i] = static_cast<float>(static_cast<int8_t>(byte_at(b + 2, i))) * d;
}

// Q4_0: f16 d, then 16 bytes; element j < 16 is the low nibble of byte j, element j + 16 its high
// nibble; x = d * (q - 8).
void q4_0(const std::byte* b, float* y) {
    const float d = f16_at(b);
    for (size_t j = 0; j < 16; ++j) {
        const uint8_t q = byte_at(b + 2, j);
        y[j] = d * static_cast<float>(static_cast<int>(q & 0x0F) - 8);
        y[j + 16] = d * static_cast<float>(static_cast<int>(q >> 4) - 8);
    }
}

// The 6-bit scales and mins of Q4_K and Q5_K: 8 of each packed in 12 bytes (ggml's
// get_scale_min_k4).
void scale_min_k4(const std::byte* s, uint8_t* sc, uint8_t* m) {
    for (size_t j = 0; j < 4; ++j) {
        sc[j] = byte_at(s, j) & 0x3F;
        m[j] = byte_at(s, j + 4) & 0x3F;
        sc[j + 4] = (byte_at(s, j + 8) & 0x0F) | ((byte_at(s, j) >> 2) & 0x30);
        m[j + 4] = (byte_at(s, j + 8) >> 4) | ((byte_at(s, j + 4) >> 2) & 0x30);
    }
}

// Q4_K: f16 d, f16 dmin, 12 bytes of scales/mins, 128 bytes of nibbles. Sub-block 2c takes the low
// nibbles of bytes [32c, 32c + 32), sub-block 2c + 1 their high nibbles; x = (d * sc) * q - dmin * m.
void q4_k(const std::byte* b, float* y) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    uint8_t sc[8], m[8];
    scale_min_k4(b + 4, sc, m);
    const std::byte* qs = b + 16;
    for (size_t s = 0; s < 8; ++s) {
        const float ds = d * static_cast<float>(sc[s]);
        const float dm = dmin * static_cast<float>(m[s]);
        const size_t chunk = s / 2, shift = 4 * (s % 2);
        for (size_t l = 0; l < 32; ++l) {
            const auto q = static_cast<float>((byte_at(qs, 32 * chunk + l) >> shift) & 0x0F);
            y[32 * s + l] = ds * q - dm;
        }
    }
}

// Q5_K: as Q4_K with 32 bytes qh after the scales: the fifth bit of sub-block s's element l is
// bit s of qh[l].
void q5_k(const std::byte* b, float* y) {
    const float d = f16_at(b), dmin = f16_at(b + 2);
    uint8_t sc[8], m[8];
    scale_min_k4(b + 4, sc, m);
    const std::byte* qh = b + 16;
    const std::byte* qs = b + 48;
    for (size_t s = 0; s < 8; ++s) {
        const float ds = d * static_cast<float>(sc[s]);
        const float dm = dmin * static_cast<float>(m[s]);
        const size_t chunk = s / 2, shift = 4 * (s % 2);
        for (size_t l = 0; l < 32; ++l) {
            const unsigned low = (byte_at(qs, 32 * chunk + l) >> shift) & 0x0F;
            const unsigned high = (byte_at(qh, l) >> s) & 0x01;
            y[32 * s + l] = ds * static_cast<float>(low | (high << 4)) - dm;
        }
    }
}

// Q6_K: 128 bytes ql, 64 bytes qh, 16 int8 scales, f16 d. In each half c of 128 values, group
// 2s + h (32 values) takes nibble s of ql[64c + 32h + l] and bits 2(2s + h) of qh[32c + l];
// x = (d * scale[i / 16]) * (q - 32).
void q6_k(const std::byte* b, float* y) {
    const std::byte* ql = b;
    const std::byte* qh = b + QK_K / 2;
    const std::byte* scales = b + QK_K / 2 + QK_K / 4;
    const float d = f16_at(b + QK_K / 2 + QK_K / 4 + QK_K / 16);
    for (size_t c = 0; c < 2; ++c)
        for (size_t g = 0; g < 4; ++g) {
            const size_t s = g / 2, h = g % 2;
            for (size_t l = 0; l < 32; ++l) {
                const unsigned low = (byte_at(ql, 64 * c + 32 * h + l) >> (4 * s)) & 0x0F;
                const unsigned high = (byte_at(qh, 32 * c + l) >> (2 * g)) & 0x03;
                const size_t i = 128 * c + 32 * g + l;
                const float ds = d * static_cast<float>(static_cast<int8_t>(byte_at(scales, i / 16)));
                y[i] = ds * static_cast<float>(static_cast<int>(low | (high << 4)) - 32);
            }
        }
}

// MXFP4 as GGUF stores it: one E8M0 byte e, then 16 bytes; element j < 16 is the low nibble of
// byte j, element j + 16 the high nibble. The value is twice the E2M1 value times 2^(e - 128),
// built from its bits as ggml_e8m0_to_fp32_half does (e = 255 gives 2^127, not NaN).
void mxfp4(const std::byte* b, float* y) {
    static constexpr int8_t kDoubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    const uint8_t e = byte_at(b, 0);
    const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : uint32_t{e - 1u} << 23;
    const float d = std::bit_cast<float>(bits);
    for (size_t j = 0; j < 16; ++j) {
        const uint8_t q = byte_at(b + 1, j);
        y[j] = d * static_cast<float>(kDoubled[q & 0x0F]);
        y[j + 16] = d * static_cast<float>(kDoubled[q >> 4]);
    }
}

using BlockFn = void (*)(const std::byte*, float*);

}  // namespace

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
            for (size_t i = 0; i < n_values; ++i) out[i] = f16_at(blocks + 2 * i);
            return {};
        case GgufType::BF16:
            for (size_t i = 0; i < n_values; ++i) out[i] = bf16_to_f32(u16_at(blocks + 2 * i));
            return {};
        default: break;
    }
    BlockFn fn = nullptr;
    switch (type) {
        case GgufType::Q8_0: fn = q8_0; break;
        case GgufType::Q4_0: fn = q4_0; break;
        case GgufType::Q4_K: fn = q4_k; break;
        case GgufType::Q5_K: fn = q5_k; break;
        case GgufType::Q6_K: fn = q6_k; break;
        case GgufType::MXFP4: fn = mxfp4; break;
        default:
            return fail(ErrorKind::unsupported, "dequantize: GGUF type " + std::string(info->name) +
                                                    " has no reference dequantizer in stormo (F32, F16, BF16, Q8_0, Q4_0, "
                                                    "Q4_K, Q5_K, Q6_K and MXFP4 have)");
    }
    const size_t n_blocks = n_values / info->block_values;
    for (size_t i = 0; i < n_blocks; ++i) fn(blocks + i * info->block_bytes, out + i * info->block_values);
    return {};
}

}  // namespace stormo
