#pragma once
// The functions a template can call by name: Jinja's namespace(), range() and dict(), and the two
// transformers adds, raise_exception(message) and strftime_now(format).
#include <optional>
#include <string>
#include <string_view>

#include "jinja/jinja_object.hpp"
#include "stormo/error.hpp"

namespace stormo::text::jinja {

bool is_global_function(std::string_view name);
// `strftime_text`, when set, is what strftime_now() returns whatever the format (reproducible
// prompts); else the local time formatted. raise_exception() returns its message as the error.
// strftime_now() refuses a result past max_bytes (the output limit).
Expected<Object> call_global(std::string_view name, const CallArgs& args, const std::optional<std::string>& strftime_text,
                             size_t max_bytes);

}  // namespace stormo::text::jinja
