#pragma once
// Element types as safetensors names them, and ggml's block types as GGUF files hold them.
// Sizes are per element; a transformers MXFP4 checkpoint keeps its blocks in U8 tensors, a GGUF
// file its own block layouts (GGUF_*: a row of n values takes n / values * bytes bytes, with the
// scales inside the blocks; stormo/gguf_types.hpp, WeightFormat::GGUF_*).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "stormo/export.hpp"

namespace stormo {

enum class DType : uint8_t {
    F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2,
    GGUF_Q8_0, GGUF_Q4_0, GGUF_Q4_K, GGUF_Q5_K, GGUF_Q6_K, GGUF_MXFP4,
    GGUF_Q4_1, GGUF_Q5_0, GGUF_Q5_1, GGUF_Q2_K, GGUF_Q3_K, GGUF_IQ4_NL, GGUF_IQ4_XS,  // appended: the values above stay
    GGUF_IQ2_XXS, GGUF_IQ2_XS, GGUF_IQ2_S, GGUF_IQ3_XXS, GGUF_IQ3_S, GGUF_IQ1_S, GGUF_IQ1_M,
};
// The last of them: every DType's value is at most this one's.
inline constexpr DType kLastDType = DType::GGUF_IQ1_M;

// "BF16", and for the block types the name llama.cpp prints ("Q4_K", "MXFP4").
STORMO_API std::string_view dtype_name(DType t);
// A safetensors header's dtype; the block types are no safetensors dtype and are never returned.
STORMO_API std::optional<DType> dtype_from_name(std::string_view name);
// Bytes per element; 0 for the block types, whose size is per block (dtype_block).
STORMO_API size_t dtype_size(DType t);

// Values and bytes per block: {1, dtype_size} for the element types.
struct DTypeBlock {
    size_t values = 1;
    size_t bytes = 0;
};
STORMO_API DTypeBlock dtype_block(DType t);
STORMO_API bool is_block_dtype(DType t);
// The bytes of a tensor of `shape`, or nothing when its last dimension is not a whole number of
// the type's blocks or the product overflows.
STORMO_API std::optional<uint64_t> dtype_bytes(DType t, const std::vector<int64_t>& shape);

inline float bf16_to_f32(uint16_t v) {
    uint32_t bits = static_cast<uint32_t>(v) << 16;
    float f;
    __builtin_memcpy(&f, &bits, sizeof f);
    return f;
}

STORMO_API float f16_to_f32(uint16_t v);
STORMO_API float f8_e4m3_to_f32(uint8_t v);

}  // namespace stormo
