#pragma once
// One GGUF file (v2 or v3, little-endian), as llama.cpp writes it:
//   magic "GGUF", u32 version, u64 tensor count, u64 key-value count,
//   key-value pairs (string key, u32 value type, value),
//   tensor infos (string name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset),
//   padding to general.alignment (default 32), then the data section; each tensor's offset counts
//   from the data section's start and is a multiple of the alignment.
// Strings are a u64 length and the bytes, no terminator. Parsing validates everything a later read
// relies on (counts and lengths against the bytes left, types, shapes without overflow, each
// tensor's byte range inside the data section, aligned, not overlapping another), so a lying file
// is refused by name and field before any large allocation.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/gguf_types.hpp"
#include "util/mapped_file.hpp"

namespace stormo {

enum class GgufValueType : uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
    u64 = 10, i64 = 11, f64 = 12,
};
STORMO_API std::string_view gguf_value_type_name(GgufValueType t);

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

inline constexpr uint32_t kGgufMaxDims = 4;           // ggml's GGML_MAX_DIMS
inline constexpr size_t kGgufMaxTensorName = 63;      // ggml's GGML_MAX_NAME less the terminator
inline constexpr uint32_t kGgufDefaultAlignment = 32;

struct STORMO_API GgufHeader {
    std::string path;
    uint32_t version = 0;
    uint64_t file_size = 0;
    uint64_t alignment = kGgufDefaultAlignment;
    uint64_t data_offset = 0;  // where the data section starts in the file
    std::map<std::string, GgufValue, std::less<>> metadata;
    std::vector<GgufTensorInfo> tensors;  // in file order

    const GgufValue* find(std::string_view key) const;
    const GgufTensorInfo* tensor(std::string_view name) const;

    std::map<std::string, size_t, std::less<>> tensor_index;  // name -> position in tensors
};

// Parses and validates a whole GGUF file held in `bytes` (views into it stay in the result).
// `path` names the file in errors.
STORMO_API Expected<GgufHeader> parse_gguf(std::span<const std::byte> bytes, const std::string& path);

// A GGUF file mapped into memory and validated; tensor bytes come from the mapping.
class STORMO_API GgufFile {
public:
    static Expected<GgufFile> open(const std::string& path);
    const GgufHeader& header() const { return header_; }
    const std::string& path() const { return header_.path; }
    // The tensor's bytes (validated to lie inside the file when it was opened).
    std::span<const std::byte> bytes(const GgufTensorInfo& t) const {
        return file_.bytes().subspan(static_cast<size_t>(t.offset), static_cast<size_t>(t.nbytes));
    }

private:
    MappedFile file_;
    GgufHeader header_;
};

}  // namespace stormo
