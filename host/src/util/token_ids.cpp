// Token id lists; see token_ids.hpp.
#include "util/token_ids.hpp"

#include <charconv>

#include "stormo/quote.hpp"

namespace stormo {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Where the comma-separated element [start, end) that holds no id lies, in 1-based bytes: a comma
// at the start, at the end or next to another stands where an id is missing.
std::string empty_element(std::string_view text, size_t start, size_t end, size_t id_number) {
    const std::string where = end == text.size() ? "the list ends with a comma (byte " + std::to_string(start) + ")"
                              : start == 0        ? "the list starts with a comma (byte " + std::to_string(end + 1) + ")"
                                                  : "nothing between the commas at bytes " + std::to_string(start) +
                                                 " and " + std::to_string(end + 1);
    return "id " + std::to_string(id_number) + " is empty: " + where;
}

}  // namespace

Expected<std::vector<int32_t>> parse_token_ids(std::string_view text, const std::string& origin, bool allow_empty) {
    std::vector<int32_t> ids;
    // Whitespace alone separates ids; a comma separates too, but only between two ids.
    const bool has_comma = text.find(',') != std::string_view::npos;
    size_t element_start = 0;  // the byte after the last comma
    size_t element_ids = 0;    // ids since the last comma
    size_t i = 0;
    for (;;) {
        while (i < text.size() && is_space(text[i])) ++i;
        if (i == text.size() || text[i] == ',') {
            if (has_comma && element_ids == 0)
                return fail(ErrorKind::invalid_argument,
                            origin + ": " + empty_element(text, element_start, i, ids.size() + 1));
            if (i == text.size()) break;
            element_start = ++i;
            element_ids = 0;
            continue;
        }
        size_t end = i;
        while (end < text.size() && !is_space(text[end]) && text[end] != ',') ++end;
        const std::string_view token = text.substr(i, end - i);
        int64_t v = -1;
        const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
        if (ec != std::errc() || ptr != token.data() + token.size() || v < 0 || v > INT32_MAX)
            return fail(ErrorKind::invalid_argument, origin + ": " + quoted_printable(token) + " is not a token id");
        ids.push_back(static_cast<int32_t>(v));
        ++element_ids;
        i = end;
    }
    if (ids.empty() && !allow_empty) return fail(ErrorKind::invalid_argument, origin + ": no token ids");
    return ids;
}

}  // namespace stormo
