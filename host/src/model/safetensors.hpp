#pragma once
// One safetensors file: an 8-byte little-endian header length, a JSON header mapping tensor names
// to {dtype, shape, data_offsets} (offsets relative to the data section after the header), then
// the data. Reading validates everything a later read relies on, so tensor reads cannot stray.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model_source.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

struct SafetensorsFile {
    std::string path;
    uint64_t file_size = 0;
    uint64_t data_begin = 0;               // 8 + header length: where data_offsets count from
    std::vector<TensorInfo> tensors;       // offsets absolute in the file; in name order
    std::map<std::string, std::string> metadata;  // "__metadata__"
};

// Headers above this are refused before reading them (the reference implementation's limit).
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

// Reads and validates the header of an open safetensors file. TensorInfo::file is set to `path`.
STORMO_API Expected<SafetensorsFile> read_safetensors_header(int fd, const std::string& path);

// Validates a header already in memory (the JSON text) against a file of `file_size` bytes.
STORMO_API Expected<SafetensorsFile> parse_safetensors_header(std::string_view header, uint64_t file_size,
                                                              const std::string& path);

}  // namespace stormo
