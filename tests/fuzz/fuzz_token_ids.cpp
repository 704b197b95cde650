// Fuzzes --ids / --ids-file text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "util/token_ids.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    (void)stormo::parse_token_ids(std::string_view(reinterpret_cast<const char*>(data), size), "--ids-file fuzz");
    return 0;
}
