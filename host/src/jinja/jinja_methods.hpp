#pragma once
// The Python methods templates call on their data: str (startswith, split, strip, ...),
// dict (items, keys, values, get) and the list methods that do not modify the list. The
// sandbox transformers uses refuses the modifying ones (append, pop, ...), and so does this.
#include <string_view>

#include "jinja/jinja_object.hpp"
#include "stormo/error.hpp"

namespace stormo::text::jinja {

bool has_method(const Value& self, std::string_view name);
// Python str methods this engine lacks (format, zfill, ...): using one is an error saying so.
bool is_unimplemented_method(const Value& self, std::string_view name);
// True for list and dict methods that modify their object (append, update, ...).
bool is_modifying_method(const Value& self, std::string_view name);
// A string result larger than max_bytes (the output limit) is refused before it is built.
Expected<Object> call_method(const Value& self, std::string_view name, const CallArgs& args, size_t max_bytes);

}  // namespace stormo::text::jinja
