#pragma once
// Python's Unicode rules on UTF-8 text: case mapping (utf8proc's simple, one code point to one
// code point mappings; Python's few multi-character ones, such as 'ß'.upper() == 'SS', are not
// made) and whitespace. Invalid UTF-8 bytes pass through unchanged.
#include <cstdint>
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
// str.isspace() of one character (its UTF-8 bytes): what strip() and split() remove, which
// includes U+00A0, U+3000 and the other Unicode spaces besides ASCII's.
bool is_python_space(std::string_view character);
// str.isprintable() of one code point: false for controls, format characters, separators other
// than ' ', surrogates, private-use and unassigned code points, which repr() escapes.
bool is_python_printable(int32_t code_point);

}  // namespace stormo::text
