#pragma once
// GGUF tensor types (ggml's `ggml_type` ids as GGUF files store them) and their block layouts, and
// the scalar reference dequantization of the types stormo reads. A type stores its values in
// blocks: `block_values` values in `block_bytes` bytes (1 value per element for the plain types).
// The dequantizers define the values bit for bit as gguf-py's `gguf.quants` does (the reference
// dequantizer in llama.cpp's tree); tests/data/gguf holds values it produced.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "stormo/dtype.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/kernels.hpp"

namespace stormo {

// The ids are the file format's; gaps are types ggml removed.
enum class GgufType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
    I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39, NVFP4 = 40, Q1_0 = 41, Q2_0 = 42,
};

struct GgufTypeInfo {
    GgufType type;
    std::string_view name;   // as llama.cpp prints it: "Q4_K"
    uint32_t block_values;   // values per block
    uint32_t block_bytes;    // bytes per block
    bool dequantizable;      // dequantize_gguf() decodes it
};

// The layout of a type id read from a file, or nothing for an id ggml does not define (so sizes
// can be checked for every type a file may hold, not only those stormo decodes).
STORMO_API std::optional<GgufTypeInfo> gguf_type_info(uint32_t id);
STORMO_API std::string_view gguf_type_name(GgufType type);

// Decodes `n_values` values (a whole number of blocks of `type`) from `blocks` into `out`.
// Fails, naming the type, for a type without a reference dequantizer here or a count that is not
// a whole number of blocks; never reads past n_values / block_values blocks.
STORMO_API Expected<void> dequantize_gguf(GgufType type, const std::byte* blocks, size_t n_values, float* out);

// The weight format the kernels run a tensor of this type in, without dequantizing (F32, F16,
// BF16 and the GGUF_* block formats); nothing for a type without kernels.
STORMO_API std::optional<WeightFormat> gguf_weight_format(GgufType type);

// The tensor dtype a family is handed a GGUF tensor of this type in (F32, F16, BF16 and the
// DType::GGUF_* block types: the types with kernels), and back; nothing for the others.
STORMO_API std::optional<DType> gguf_dtype(GgufType type);
STORMO_API std::optional<GgufType> gguf_type_of(DType dtype);

}  // namespace stormo
