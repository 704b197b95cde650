#pragma once
// A GGUF model as the host hands it to a family: the host reads and validates the container (one
// file or every part of a split, host/src/model/gguf*.cpp); a family that claims the file's
// general.architecture (Family::gguf_architectures) maps its metadata and tensors onto the
// config.json and the checkpoint tensors the family reads (Family::map_gguf). The family toolkit's
// stormo/toolkit/gguf_mapping.hpp holds what every mapping shares.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/dtype.hpp"
#include "stormo/export.hpp"
#include "stormo/gguf_types.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

enum class GgufValueType : uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
    u64 = 10, i64 = 11, f64 = 12,
};
STORMO_API std::string_view gguf_value_type_name(GgufValueType t);
// The bytes of one value of a scalar type; 0 for string and array.
STORMO_API size_t gguf_scalar_size(GgufValueType t);

// llama.cpp's token types in tokenizer.ggml.token_type (llama_token_type / gguf.TokenType).
enum GgufTokenType : int64_t {
    kGgufTokenNormal = 1, kGgufTokenUnknown = 2, kGgufTokenControl = 3, kGgufTokenUserDefined = 4,
    kGgufTokenUnused = 5, kGgufTokenByte = 6,
};

// A metadata value. Strings and arrays are views into the parsed bytes: valid while they live.
struct STORMO_API GgufValue {
    GgufValueType type = GgufValueType::u8;
    GgufValueType element_type = GgufValueType::u8;  // arrays only
    uint64_t count = 1;                               // arrays: elements; scalars 1
    std::span<const std::byte> raw;                   // scalars and numeric arrays: little-endian bytes
    std::string_view text;                            // string
    std::vector<std::string_view> strings;            // array of strings

    bool is_array() const { return type == GgufValueType::array; }
    // A scalar of an integer type (bool excluded), widened; nothing if another type or out of range.
    std::optional<int64_t> as_int() const;
    std::optional<uint64_t> as_uint() const;
    // f32 or f64 (and, exactly when representable, integers).
    std::optional<double> as_float() const;
    std::optional<bool> as_bool() const;
    std::optional<std::string_view> as_string() const;
    // Element i of a numeric array.
    std::optional<int64_t> int_at(uint64_t i) const;
    std::optional<double> float_at(uint64_t i) const;
    // "u32", "array of string"
    std::string type_name() const;
};

// A tensor as the file describes it. ne is ggml's order: ne[0] is the fastest-varying (contiguous)
// dimension, so a PyTorch [rows, cols] matrix has ne = {cols, rows}.
struct GgufTensorInfo {
    std::string name;
    GgufType type = GgufType::F32;
    uint32_t n_dims = 0;
    std::array<uint64_t, 4> ne{1, 1, 1, 1};
    uint64_t offset = 0;   // absolute byte offset in the file
    uint64_t nbytes = 0;
    uint64_t elements = 0;
};

// One GGUF model, parsed and validated by the host; everything it returns lives as long as it.
class STORMO_API GgufView {
public:
    virtual ~GgufView();
    // The model's path as errors name it (the first part of a split).
    virtual const std::string& path() const = 0;
    // general.architecture, which the family claimed.
    virtual const std::string& architecture() const = 0;
    // A metadata value (the first part's metadata is the model's), or nullptr.
    virtual const GgufValue* value(std::string_view key) const = 0;
    // The tensor table of every part, in part order then file order; one tensor by name.
    virtual const std::vector<const GgufTensorInfo*>& tensors() const = 0;
    virtual const GgufTensorInfo* tensor(std::string_view name) const = 0;
    // The file (the part) that holds a tensor of this model, for errors.
    virtual const std::string& file_of(const GgufTensorInfo& t) const = 0;
    // A tensor's bytes as the file stores them (for the few tensors a mapping decodes or reorders;
    // the rest are handed back as ranges of the file, GgufMappedTensor::in_file).
    virtual std::span<const std::byte> bytes(const GgufTensorInfo& t) const = 0;
};

// A tensor as the family will read it: its checkpoint name and shape (row-major, PyTorch's order),
// and either bytes of the file as they are (`in_file`, a tensor of the GgufView: its own type, or
// `slice_bytes` from `slice_offset`, one expert's slice of a stacked tensor) or float32 values the
// mapping made.
struct GgufMappedTensor {
    std::string name;
    Shape shape;
    DType dtype = DType::F32;
    const GgufTensorInfo* in_file = nullptr;
    uint64_t slice_offset = 0;  // in_file: where the bytes start inside the GGUF tensor
    uint64_t slice_bytes = 0;
    std::vector<float> values;  // otherwise
};

// What a family's mapping returns: the config.json the checkpoint would have, its
// generation_config.json when the file names the ids generation ends at, and the tensors.
struct GgufMappedModel {
    std::string config_json;
    std::optional<std::string> generation_config_json;
    std::vector<GgufMappedTensor> tensors;
    // The file's tensors the mapping knows and leaves out on purpose (the multi-token-prediction
    // blocks, which the families do not load from a GGUF file). The host refuses a file holding a
    // tensor that is neither mapped, read through GgufView::bytes, nor listed here: metadata that
    // describes fewer blocks or experts than the file holds would run part of the model.
    std::vector<std::string> left_out;
};

}  // namespace stormo
