#pragma once
// Python's case mapping and letter classes on UTF-8 text (utf8proc's simple, one code point to
// one code point mappings; Python's few multi-character ones, such as 'ß'.upper() == 'SS', are
// not made). Invalid UTF-8 bytes pass through unchanged.
#include <string>
#include <string_view>

namespace stormo::text {

std::string utf8_upper(std::string_view s);
std::string utf8_lower(std::string_view s);
// str.capitalize(): the first character upper-cased (title-cased), the rest lower-cased.
std::string utf8_capitalize(std::string_view s);
// str.title(): a letter after a letter is lower-cased, any other letter upper-cased.
std::string utf8_python_title(std::string_view s);
// Jinja's title filter: words begin after whitespace, '-' and opening brackets.
std::string utf8_jinja_title(std::string_view s);

}  // namespace stormo::text
