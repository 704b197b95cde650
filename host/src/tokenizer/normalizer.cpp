#include "tokenizer/normalizer.hpp"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace stormo::text {

namespace {

// Text whose code points are all below U+0300 is already NFC: no character there decomposes
// canonically to something else, and combining marks begin at U+0300 (lead byte 0xCC).
bool below_combining_marks(std::string_view text) {
    for (const char c : text)
        if (static_cast<unsigned char>(c) >= 0xCC) return false;
    return true;
}

// NFC of one stretch of text (utf8proc_map with STABLE|COMPOSE is utf8proc_NFC for a sized,
// not NUL-terminated, input). Text utf8proc rejects is kept as it is.
void append_nfc(std::string_view text, std::string& out) {
    if (below_combining_marks(text)) {
        out.append(text);
        return;
    }
    utf8proc_uint8_t* mapped = nullptr;
    const auto options = static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &mapped, options);
    const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(mapped, &std::free);
    if (n < 0)
        out.append(text);
    else
        out.append(reinterpret_cast<const char*>(mapped), static_cast<size_t>(n));
}

}  // namespace

std::string Normalizer::apply(std::string_view text) const {
    if (!nfc) return std::string(text);
    // NFC works line by line: a newline never composes with a neighbour and blocks reordering,
    // so each line normalizes alone, and most lines take the fast path above.
    std::string out;
    out.reserve(text.size());
    while (!text.empty()) {
        const size_t newline = text.find('\n');
        const size_t line_end = newline == std::string_view::npos ? text.size() : newline + 1;
        append_nfc(text.substr(0, line_end), out);
        text.remove_prefix(line_end);
    }
    return out;
}

}  // namespace stormo::text
