// Element types: safetensors names, sizes, and exact widening of the small float formats.
#include "stormo/dtype.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace stormo {
namespace {

struct DTypeEntry {
    DType type;
    std::string_view name;
    size_t block_values;  // 1 for the element types
    size_t block_bytes;   // the element size for the element types
};

// One row per dtype; the element types' names are the ones safetensors headers use, the block
// types' (ggml's layouts, as stormo/gguf_types.hpp describes them) llama.cpp's.
constexpr std::array<DTypeEntry, 32> kDTypes{{
    {DType::F64, "F64", 1, 8},
    {DType::F32, "F32", 1, 4},
    {DType::F16, "F16", 1, 2},
    {DType::BF16, "BF16", 1, 2},
    {DType::I64, "I64", 1, 8},
    {DType::I32, "I32", 1, 4},
    {DType::I16, "I16", 1, 2},
    {DType::I8, "I8", 1, 1},
    {DType::U8, "U8", 1, 1},
    {DType::BOOL, "BOOL", 1, 1},
    {DType::F8_E4M3, "F8_E4M3", 1, 1},
    {DType::F8_E5M2, "F8_E5M2", 1, 1},
    {DType::GGUF_Q8_0, "Q8_0", 32, 34},
    {DType::GGUF_Q4_0, "Q4_0", 32, 18},
    {DType::GGUF_Q4_K, "Q4_K", 256, 144},
    {DType::GGUF_Q5_K, "Q5_K", 256, 176},
    {DType::GGUF_Q6_K, "Q6_K", 256, 210},
    {DType::GGUF_MXFP4, "MXFP4", 32, 17},
    {DType::GGUF_Q4_1, "Q4_1", 32, 20},
    {DType::GGUF_Q5_0, "Q5_0", 32, 22},
    {DType::GGUF_Q5_1, "Q5_1", 32, 24},
    {DType::GGUF_Q2_K, "Q2_K", 256, 84},
    {DType::GGUF_Q3_K, "Q3_K", 256, 110},
    {DType::GGUF_IQ4_NL, "IQ4_NL", 32, 18},
    {DType::GGUF_IQ4_XS, "IQ4_XS", 256, 136},
    {DType::GGUF_IQ2_XXS, "IQ2_XXS", 256, 66},
    {DType::GGUF_IQ2_XS, "IQ2_XS", 256, 74},
    {DType::GGUF_IQ2_S, "IQ2_S", 256, 82},
    {DType::GGUF_IQ3_XXS, "IQ3_XXS", 256, 98},
    {DType::GGUF_IQ3_S, "IQ3_S", 256, 110},
    {DType::GGUF_IQ1_S, "IQ1_S", 256, 50},
    {DType::GGUF_IQ1_M, "IQ1_M", 256, 56},
}};

const DTypeEntry* entry(DType t) {
    for (const auto& e : kDTypes)
        if (e.type == t) return &e;
    return nullptr;
}

float from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

}  // namespace

std::string_view dtype_name(DType t) {
    const DTypeEntry* e = entry(t);
    return e ? e->name : std::string_view("unknown");
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (const auto& e : kDTypes)
        if (e.name == name && e.block_values == 1) return e.type;
    return std::nullopt;
}

size_t dtype_size(DType t) {
    const DTypeEntry* e = entry(t);
    return e && e->block_values == 1 ? e->block_bytes : 0;
}

DTypeBlock dtype_block(DType t) {
    const DTypeEntry* e = entry(t);
    return e ? DTypeBlock{e->block_values, e->block_bytes} : DTypeBlock{1, 0};
}

bool is_block_dtype(DType t) { return dtype_block(t).values > 1; }

std::optional<uint64_t> dtype_bytes(DType t, const std::vector<int64_t>& shape) {
    const DTypeBlock b = dtype_block(t);
    uint64_t values = 1;
    for (int64_t d : shape) {
        if (d < 0 || __builtin_mul_overflow(values, static_cast<uint64_t>(d), &values)) return std::nullopt;
    }
    const uint64_t last = shape.empty() ? 1 : static_cast<uint64_t>(shape.back());
    if (last % b.values != 0) return std::nullopt;
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(values / b.values, static_cast<uint64_t>(b.bytes), &bytes)) return std::nullopt;
    return bytes;
}

// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
float f16_to_f32(uint16_t v) {
    const uint32_t sign = static_cast<uint32_t>(v & 0x8000u) << 16;
    const uint32_t exponent = (v >> 10) & 0x1Fu;
    const uint32_t mantissa = v & 0x3FFu;
    if (exponent == 0x1Fu)  // inf, or NaN keeping its payload
        return from_bits(sign | 0x7F800000u | (mantissa << 13));
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float32
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    return from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// OCP FP8 E4M3FN: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN.
float f8_e4m3_to_f32(uint8_t v) {
    const bool negative = (v & 0x80u) != 0;
    const unsigned exponent = (v >> 3) & 0x0Fu;
    const unsigned mantissa = v & 0x07u;
    if (exponent == 0x0Fu && mantissa == 0x07u) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        return negative ? -nan : nan;
    }
    float magnitude;
    if (exponent == 0)  // subnormal: mantissa/8 * 2^(1-7)
        magnitude = std::ldexp(static_cast<float>(mantissa), -9);
    else
        magnitude = std::ldexp(static_cast<float>(8u + mantissa), static_cast<int>(exponent) - 10);
    return negative ? -magnitude : magnitude;
}

}  // namespace stormo
