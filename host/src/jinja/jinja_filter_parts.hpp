#pragma once
// What the filter files share: reading a filter's arguments and Jinja's attribute paths, and the
// sequence filters jinja_filters.cpp dispatches to (jinja_sequence_filters.cpp).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/jinja_object.hpp"
#include "stormo/error.hpp"

namespace stormo::text::jinja::filter_parts {

Error type_error(std::string message);
// A flag argument by position or keyword; `fallback` when not given.
bool flag_arg(const CallArgs& args, size_t index, std::string_view name, bool fallback);
// An argument that may be given as None: nullptr then, as when absent.
const Object* optional_arg(const CallArgs& args, size_t index, std::string_view name);
// Jinja's attribute getter: "a.b.0" looks up a, then b, then index 0, each as x[part].
Expected<Object> lookup_path(const Object& item, const std::string& path);

Expected<Object> sort_filter(const Object& input, const CallArgs& args);
Expected<Object> unique_filter(const Object& input, const CallArgs& args);
Expected<Object> extreme_filter(const Object& input, const CallArgs& args, bool want_max);  // min, max
Expected<Object> sum_filter(const Object& input, const CallArgs& args, size_t max_bytes);
// selectattr / rejectattr (by_attribute) and select / reject; `keep` is what the test must give.
Expected<Object> select_filter(const Object& input, const CallArgs& args, bool by_attribute, bool keep);
Expected<Object> map_filter(const Object& input, const CallArgs& args, size_t max_bytes);
Expected<Object> sequence_filter(std::string_view name, const Object& input);  // first, last, list, reverse
Expected<Object> join_filter(const Object& input, const CallArgs& args, size_t max_bytes);
Expected<Object> items_filter(const Object& input);
Expected<Object> dictsort_filter(const Object& input, const CallArgs& args);

}  // namespace stormo::text::jinja::filter_parts
