#pragma once
// Element types as safetensors names them. Sizes are per element; MXFP4 lives in U8 tensors.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "stormo/export.hpp"

namespace stormo {

enum class DType : uint8_t { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2 };

STORMO_API std::string_view dtype_name(DType t);
STORMO_API std::optional<DType> dtype_from_name(std::string_view name);
STORMO_API size_t dtype_size(DType t);

inline float bf16_to_f32(uint16_t v) {
    uint32_t bits = static_cast<uint32_t>(v) << 16;
    float f;
    __builtin_memcpy(&f, &bits, sizeof f);
    return f;
}

STORMO_API float f16_to_f32(uint16_t v);
STORMO_API float f8_e4m3_to_f32(uint8_t v);

}  // namespace stormo
