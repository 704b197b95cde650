// Fuzzes model.safetensors.index.json: the weight map and the shard names it lists.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/safetensors_index.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    (void)stormo::parse_safetensors_index(text, "fuzz.index.json");
    return 0;
}
