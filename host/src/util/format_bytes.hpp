#pragma once
// Byte counts as people read them, for messages, `inspect` and stats.
#include <cstdint>
#include <string>

#include "stormo/export.hpp"

namespace stormo {

// "8.00 GiB" style (powers of 1024, two decimals), or "123 B" below a KiB.
STORMO_API std::string format_bytes(uint64_t bytes);

}  // namespace stormo
