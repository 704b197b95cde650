// Fuzzes a safetensors header: the JSON after the 8-byte length, validated against a file size.
// Input: 8 bytes of file size (little-endian, reduced so some inputs fit), then the header text.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "model/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 8) return 0;
    uint64_t file_size = 0;
    std::memcpy(&file_size, data, 8);
    const std::string_view header(reinterpret_cast<const char*>(data + 8), size - 8);
    file_size = 8 + header.size() + file_size % (uint64_t{1} << 32);
    (void)stormo::parse_safetensors_header(header, file_size, "fuzz.safetensors");
    return 0;
}
