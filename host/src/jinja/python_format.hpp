#pragma once
// Python's printf-style formatting, `"%s: %d" % (name, n)`, which templates use through the `%`
// operator and Jinja's format filter: conversions s r a d i u f F e E g G x X o c and %%, flags
// - + space 0 #, width and precision, and %(key)s against a dict.
#include <string>
#include <string_view>

#include "jinja/chat_value.hpp"
#include "stormo/error.hpp"

namespace stormo::text {

// `args` is a tuple (its items fill the conversions in order), a dict (for %(key)s), or any other
// single value. Errors are Python's TypeError and ValueError messages; a result, a width or a
// precision larger than max_bytes is an ErrorKind::resource error, found before the text is built.
Expected<std::string> percent_format(std::string_view format, const Value& args, size_t max_bytes);

}  // namespace stormo::text
