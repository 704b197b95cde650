#include "text/normalizer.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace stormo::text {

std::string Normalizer::apply(std::string_view text) const {
    if (!nfc || text.empty()) return std::string(text);
    // utf8proc_map with STABLE|COMPOSE is utf8proc_NFC for a sized (not NUL-terminated) input.
    utf8proc_uint8_t* mapped = nullptr;
    const auto options = static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &mapped, options);
    const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
    if (n < 0) return std::string(text);
    return std::string(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
}

}  // namespace stormo::text
