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
#include "stormo/gguf_view.hpp"
#include "util/mapped_file.hpp"

namespace stormo {

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
