#pragma once
// Python's text forms of values, as templates print them: str() (what {{ x }} and |string give)
// and repr() (how a list or dict shows its members), with floats in Python's shortest round-trip
// repr, so a prompt matches the one transformers renders byte for byte.
#include <string>
#include <string_view>

#include "jinja/chat_value.hpp"

namespace stormo::text {

// repr(float): shortest digits that read back the same; fixed notation for exponents -4..15,
// else scientific with a two-digit signed exponent ("1e-05", "1e+16"); "nan", "inf", "-inf".
std::string python_float_repr(double d);
// repr(str): single quotes unless the text holds ' and no ", escapes for \\, the quote and
// what Python deems non-printable (controls, format characters, separators but ' ', ...);
// printable non-ASCII text is kept as it is.
std::string python_string_repr(std::string_view s);
// str(v): None, True, False, 12, 1.5, the text itself, ['a', 1], ('a', 1), {'k': 'v'}.
std::string python_str(const Value& v);
// repr(v): as str(v) except that a string is quoted.
std::string python_repr(const Value& v);

}  // namespace stormo::text
