// Fuzzes the YAML engine configuration (--config FILE).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/engine_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    (void)stormo::parse_engine_config(text, "fuzz.yaml");
    (void)stormo::parse_size(text, "--expert-budget");
    return 0;
}
