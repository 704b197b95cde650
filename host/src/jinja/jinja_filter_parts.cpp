// Argument reading shared by the filters.
#include <algorithm>
#include <cstdlib>

#include "jinja/jinja_filter_parts.hpp"

namespace stormo::text::jinja::filter_parts {

Error type_error(std::string message) { return Error{ErrorKind::invalid_argument, std::move(message)}; }

bool flag_arg(const CallArgs& args, size_t index, std::string_view name, bool fallback) {
    const Object* a = args.get(index, name);
    return a ? truthy(*a) : fallback;
}

const Object* optional_arg(const CallArgs& args, size_t index, std::string_view name) {
    const Object* a = args.get(index, name);
    if (a && a->is_data() && a->data.is_null()) return nullptr;
    return a;
}

// Jinja's attribute getter: "a.b.0" looks up a, then b, then index 0, each as x[part].
Expected<Object> lookup_path(const Object& item, const std::string& path) {
    Object current = item;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        Object key = digits ? Object::of(Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10))))
                            : Object::of(Value(part));
        STORMO_TRY_ASSIGN(current, get_item(current, key));
        if (dot == std::string::npos) return current;
        start = dot + 1;
    }
}

}  // namespace stormo::text::jinja::filter_parts
