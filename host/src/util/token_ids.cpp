// Token id lists; see token_ids.hpp.
#include "util/token_ids.hpp"

#include <charconv>

#include "util/quote.hpp"

namespace stormo {
namespace {

bool is_separator(char c) { return c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

Expected<std::vector<int32_t>> parse_token_ids(std::string_view text, const std::string& origin, bool allow_empty) {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i < text.size()) {
        if (is_separator(text[i])) {
            ++i;
            continue;
        }
        size_t end = i;
        while (end < text.size() && !is_separator(text[end])) ++end;
        const std::string_view token = text.substr(i, end - i);
        int64_t v = -1;
        const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
        if (ec != std::errc() || ptr != token.data() + token.size() || v < 0 || v > INT32_MAX)
            return fail(ErrorKind::invalid_argument, origin + ": " + quoted_printable(token) + " is not a token id");
        ids.push_back(static_cast<int32_t>(v));
        i = end;
    }
    if (ids.empty() && !allow_empty) return fail(ErrorKind::invalid_argument, origin + ": no token ids");
    return ids;
}

}  // namespace stormo
