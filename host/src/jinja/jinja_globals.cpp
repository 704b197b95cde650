// namespace(), range(), dict(), raise_exception(), strftime_now().
#include "jinja/jinja_globals.hpp"

#include <ctime>

namespace stormo::text::jinja {
namespace {

constexpr int64_t max_range_items = 1'000'000;

Error type_error(std::string message) { return Error{ErrorKind::invalid_argument, std::move(message)}; }

Expected<Object> make_namespace(const CallArgs& args) {
    auto ns = std::make_shared<Namespace>();
    for (const Object& initial : args.positional) {
        if (!initial.is_data() || !initial.data.is_object())
            return tl::unexpected(type_error("namespace() takes keyword arguments or a dict"));
        for (const auto& [key, value] : initial.data.as_object()) ns->set(key, Object::of(value));
    }
    for (const auto& [key, value] : args.keyword) ns->set(key, value);
    Object o;
    o.kind = Object::Kind::namespace_object;
    o.ns = std::move(ns);
    return o;
}

Expected<Object> make_range(const CallArgs& args) {
    int64_t bounds[3] = {0, 0, 1};
    if (args.positional.empty() || args.positional.size() > 3 || !args.keyword.empty())
        return tl::unexpected(type_error("range() takes 1 to 3 integer arguments"));
    for (size_t k = 0; k < args.positional.size(); ++k) {
        const Object& a = args.positional[k];
        if (!a.is_data() || !(a.data.is_int() || a.data.is_bool()))
            return tl::unexpected(type_error("range() needs integers, not " + type_name(a)));
        int64_t v = a.data.is_bool() ? a.data.as_bool() : a.data.as_int();
        if (args.positional.size() == 1) bounds[1] = v;
        else bounds[k] = v;
    }
    auto [start, stop, step] = bounds;
    if (step == 0) return tl::unexpected(type_error("range() arg 3 must not be zero"));
    ValueList items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
        if (static_cast<int64_t>(items.size()) >= max_range_items)
            return fail(ErrorKind::resource, "range() of more than 1000000 items");
        items.emplace_back(i);
        if (__builtin_add_overflow(i, step, &i)) break;  // past int64 is past any stop
    }
    return Object::of(Value::list(std::move(items)));
}

Expected<Object> make_dict(const CallArgs& args) {
    Value out = Value::object();
    for (const Object& initial : args.positional) {
        if (!initial.is_data() || !initial.data.is_object()) return tl::unexpected(type_error("dict() takes keyword arguments or a dict"));
        for (const auto& [key, value] : initial.data.as_object()) out.set(key, value);
    }
    for (const auto& [key, value] : args.keyword) {
        STORMO_TRY_ASSIGN(Value v, require_data(value, "dict()"));
        out.set(key, std::move(v));
    }
    return Object::of(std::move(out));
}

// strftime answers 0 both for an empty result and for one that does not fit, so the format gets
// a trailing character that makes every result non-empty; the buffer grows until it fits or
// would pass max_bytes.
Expected<Object> strftime_now(const CallArgs& args, const std::optional<std::string>& fixed, size_t max_bytes) {
    const Object* format = args.get(0, "format");
    if (!format || !format->is_data() || !format->data.is_string())
        return tl::unexpected(type_error("strftime_now() needs a format string"));
    if (fixed) return Object::of(Value(*fixed));
    if (format->data.as_string().find('\0') != std::string::npos)
        return tl::unexpected(type_error("strftime_now(): embedded null character"));
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    const std::string marked = format->data.as_string() + "|";
    for (size_t size = 256;; size *= 2) {
        std::string buf(size, '\0');
        size_t n = std::strftime(buf.data(), buf.size(), marked.c_str(), &local);
        if (n > 0) {
            buf.resize(n - 1);
            return Object::of(Value(std::move(buf)));
        }
        if (size > max_bytes) return tl::unexpected(too_large("strftime_now() result", max_bytes));
    }
}

}  // namespace

bool is_global_function(std::string_view name) {
    return name == "namespace" || name == "range" || name == "dict" || name == "raise_exception" || name == "strftime_now";
}

Expected<Object> call_global(std::string_view name, const CallArgs& args, const std::optional<std::string>& strftime_text,
                             size_t max_bytes) {
    if (name == "namespace") return make_namespace(args);
    if (name == "range") return make_range(args);
    if (name == "dict") return make_dict(args);
    if (name == "strftime_now") return strftime_now(args, strftime_text, max_bytes);
    const Object* message = args.get(0, "message");
    return fail(ErrorKind::invalid_argument, "raise_exception: " + (message ? to_text(*message) : std::string()));
}

}  // namespace stormo::text::jinja
