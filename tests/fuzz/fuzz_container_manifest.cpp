// Fuzzes a stormo container's manifest (stormo-container.json): what a container is opened by.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/container_manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    (void)stormo::parse_container_manifest(text, "fuzz/stormo-container.json");
    return 0;
}
