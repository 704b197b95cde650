// The GGUF (ggml) tensor types and their block layouts, as gguf-py's GGML_QUANT_SIZES lists them.
#include <array>
#include <utility>

#include "stormo/gguf_types.hpp"

namespace stormo {
namespace {

constexpr uint32_t QK_K = 256;  // the K-quants' and i-quants' super-block

// Every type ggml defines, so a file's sizes can be checked whatever it holds; `dequantizable`
// marks those dequantize_gguf decodes.
constexpr std::array<GgufTypeInfo, 35> kTypes{{
    {GgufType::F32, "F32", 1, 4, true},
    {GgufType::F16, "F16", 1, 2, true},
    {GgufType::Q4_0, "Q4_0", 32, 2 + 16, true},
    {GgufType::Q4_1, "Q4_1", 32, 2 + 2 + 16, true},
    {GgufType::Q5_0, "Q5_0", 32, 2 + 4 + 16, true},
    {GgufType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16, true},
    {GgufType::Q8_0, "Q8_0", 32, 2 + 32, true},
    {GgufType::Q8_1, "Q8_1", 32, 4 + 4 + 32, false},
    {GgufType::Q2_K, "Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4, true},
    {GgufType::Q3_K, "Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12, true},
    {GgufType::Q4_K, "Q4_K", QK_K, 2 + 2 + QK_K / 2 + 12, true},
    {GgufType::Q5_K, "Q5_K", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12, true},
    {GgufType::Q6_K, "Q6_K", QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16, true},
    {GgufType::Q8_K, "Q8_K", QK_K, 4 + QK_K + QK_K / 8, false},
    {GgufType::IQ2_XXS, "IQ2_XXS", QK_K, 2 + QK_K / 4, true},
    {GgufType::IQ2_XS, "IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32, true},
    {GgufType::IQ3_XXS, "IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8, true},
    {GgufType::IQ1_S, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16, true},
    {GgufType::IQ4_NL, "IQ4_NL", 32, 2 + 16, true},
    {GgufType::IQ3_S, "IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, true},
    {GgufType::IQ2_S, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16, true},
    {GgufType::IQ4_XS, "IQ4_XS", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64, true},
    {GgufType::I8, "I8", 1, 1, false},
    {GgufType::I16, "I16", 1, 2, false},
    {GgufType::I32, "I32", 1, 4, false},
    {GgufType::I64, "I64", 1, 8, false},
    {GgufType::F64, "F64", 1, 8, false},
    {GgufType::IQ1_M, "IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, true},
    {GgufType::BF16, "BF16", 1, 2, true},
    {GgufType::TQ1_0, "TQ1_0", QK_K, 2 + 4 * 13, false},
    {GgufType::TQ2_0, "TQ2_0", QK_K, 2 + 64, false},
    {GgufType::MXFP4, "MXFP4", 32, 1 + 16, true},
    {GgufType::NVFP4, "NVFP4", 64, 4 + 32, false},
    {GgufType::Q1_0, "Q1_0", 128, 2 + 16, false},
    {GgufType::Q2_0, "Q2_0", 64, 2 + 16, false},
}};

// The GGUF types a tensor dtype stands for, one to one.
constexpr std::array<std::pair<GgufType, DType>, 23> kDtypes{{
    {GgufType::F32, DType::F32},
    {GgufType::F16, DType::F16},
    {GgufType::BF16, DType::BF16},
    {GgufType::Q8_0, DType::GGUF_Q8_0},
    {GgufType::Q4_0, DType::GGUF_Q4_0},
    {GgufType::Q4_K, DType::GGUF_Q4_K},
    {GgufType::Q5_K, DType::GGUF_Q5_K},
    {GgufType::Q6_K, DType::GGUF_Q6_K},
    {GgufType::MXFP4, DType::GGUF_MXFP4},
    {GgufType::Q4_1, DType::GGUF_Q4_1},
    {GgufType::Q5_0, DType::GGUF_Q5_0},
    {GgufType::Q5_1, DType::GGUF_Q5_1},
    {GgufType::Q2_K, DType::GGUF_Q2_K},
    {GgufType::Q3_K, DType::GGUF_Q3_K},
    {GgufType::IQ4_NL, DType::GGUF_IQ4_NL},
    {GgufType::IQ4_XS, DType::GGUF_IQ4_XS},
    {GgufType::IQ2_XXS, DType::GGUF_IQ2_XXS},
    {GgufType::IQ2_XS, DType::GGUF_IQ2_XS},
    {GgufType::IQ2_S, DType::GGUF_IQ2_S},
    {GgufType::IQ3_XXS, DType::GGUF_IQ3_XXS},
    {GgufType::IQ3_S, DType::GGUF_IQ3_S},
    {GgufType::IQ1_S, DType::GGUF_IQ1_S},
    {GgufType::IQ1_M, DType::GGUF_IQ1_M},
}};

}  // namespace

std::optional<DType> gguf_dtype(GgufType type) {
    for (const auto& [g, d] : kDtypes)
        if (g == type) return d;
    return std::nullopt;
}

std::optional<GgufType> gguf_type_of(DType dtype) {
    for (const auto& [g, d] : kDtypes)
        if (d == dtype) return g;
    return std::nullopt;
}

std::optional<GgufTypeInfo> gguf_type_info(uint32_t id) {
    for (const GgufTypeInfo& t : kTypes)
        if (static_cast<uint32_t>(t.type) == id) return t;
    return std::nullopt;
}

std::string_view gguf_type_name(GgufType type) {
    auto info = gguf_type_info(static_cast<uint32_t>(type));
    return info ? info->name : std::string_view("unknown");
}

}  // namespace stormo
