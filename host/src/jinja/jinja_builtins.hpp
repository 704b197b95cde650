#pragma once
// Jinja's filters (x | name(args)) and tests (x is name args) this engine implements. The
// parser asks is_known_* so a template using any other fails at load, not halfway through a
// render. Errors are plain messages; the evaluator adds the template line.
#include <string_view>

#include "jinja/jinja_object.hpp"
#include "stormo/error.hpp"

namespace stormo::text::jinja {

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

// A string a filter builds is refused before it grows past max_bytes (the output limit).
Expected<Object> apply_filter(std::string_view name, const Object& input, const CallArgs& args, size_t max_bytes);
Expected<bool> apply_test(std::string_view name, const Object& subject, const CallArgs& args);

}  // namespace stormo::text::jinja
