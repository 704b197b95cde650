// Jinja's filters, as Jinja2 3.1 defines them, except tojson: transformers replaces Jinja's
// HTML-safe tojson with plain json.dumps(x, ensure_ascii=False, indent, separators, sort_keys).
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "jinja/jinja_builtins.hpp"
#include "jinja/jinja_filter_parts.hpp"
#include "jinja/jinja_methods.hpp"
#include "jinja/python_format.hpp"
#include "jinja/python_text.hpp"
#include "jinja/unicode_text.hpp"

namespace stormo::text::jinja {

using namespace filter_parts;  // this file's helpers and the sequence filters it dispatches to

namespace {

constexpr std::array known_filters = {
    "trim",    "length",  "count",    "default", "d",       "tojson",     "string",     "upper",  "lower",
    "title",   "capitalize", "replace", "join",  "first",   "last",       "list",       "items",  "selectattr",
    "rejectattr", "select", "reject", "map",     "unique",  "reverse",    "sort",       "int",    "float",
    "abs",     "indent",  "safe",     "e",       "escape",  "wordcount",  "min",        "max",    "sum",
    "dictsort", "format"};

Expected<Object> tojson_filter(const Object& input, const CallArgs& args, size_t max_bytes) {
    if (!input.is_data())
        return tl::unexpected(type_error("Object of type " + type_name(input) + " is not JSON serializable"));
    JsonStyle style;
    style.ensure_ascii = flag_arg(args, 0, "ensure_ascii", false);
    if (const Object* indent = optional_arg(args, 1, "indent")) {
        if (indent->is_data() && indent->data.is_int()) style.indent = std::string(static_cast<size_t>(std::max<int64_t>(indent->data.as_int(), 0)), ' ');
        else if (indent->is_data() && indent->data.is_string()) style.indent = indent->data.as_string();
        else return tl::unexpected(type_error("tojson indent must be an integer or a string"));
        style.item_separator.assign(1, ',');
    }
    if (const Object* separators = optional_arg(args, 2, "separators")) {
        if (!separators->is_data() || !separators->data.is_list() || separators->data.as_list().size() != 2 ||
            !separators->data.as_list()[0].is_string() || !separators->data.as_list()[1].is_string())
            return tl::unexpected(type_error("tojson separators must be two strings"));
        style.item_separator = separators->data.as_list()[0].as_string();
        style.key_separator = separators->data.as_list()[1].as_string();
    }
    style.sort_keys = flag_arg(args, 3, "sort_keys", false);
    std::optional<std::string> json = to_json_within(input.data, style, max_bytes);
    if (!json) return tl::unexpected(too_large("tojson result", max_bytes));
    return Object::of(Value(std::move(*json)));
}

// Jinja's indent: every line but the first (and blank lines unless `blank`) gets the prefix.
Expected<Object> indent_filter(const Object& input, const CallArgs& args, size_t max_bytes) {
    std::string prefix = "    ";
    if (const Object* width = args.get(0, "width")) {
        if (width->is_data() && width->data.is_string()) {
            prefix = width->data.as_string();
        } else if (width->is_data() && width->data.is_int()) {
            int64_t spaces = std::max<int64_t>(width->data.as_int(), 0);
            if (static_cast<uint64_t>(spaces) > max_bytes) return tl::unexpected(too_large("indent width", max_bytes));
            prefix.assign(static_cast<size_t>(spaces), ' ');
        } else {
            return tl::unexpected(type_error("indent width must be an integer or a string"));
        }
    }
    bool first = flag_arg(args, 1, "first", false);
    bool blank = flag_arg(args, 2, "blank", false);
    std::string text = to_text(input) + "\n";  // Jinja's own trick so splitlines sees the last line
    std::vector<std::string> lines;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        lines.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    std::string out;
    if (first) STORMO_TRY(append_within(out, prefix, max_bytes));
    for (size_t k = 0; k < lines.size(); ++k) {
        if (k > 0) STORMO_TRY(append_within(out, "\n", max_bytes));
        if (k > 0 && (blank || !lines[k].empty())) STORMO_TRY(append_within(out, prefix, max_bytes));
        STORMO_TRY(append_within(out, lines[k], max_bytes));
    }
    return Object::of(Value(std::move(out)));
}

// int(d) for a float: nan has no integer (Jinja then gives the default), and one beyond int64
// would be Python's big int (inf its OverflowError): an error here rather than a wrong number.
Expected<std::optional<int64_t>> truncated(double d) {
    if (std::isnan(d)) return std::nullopt;
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return fail(ErrorKind::unsupported, "int of " + python_float_repr(d) + " is beyond 64-bit integers");
    return static_cast<int64_t>(d);
}

Expected<Object> int_filter(const Object& input, const CallArgs& args) {
    Object fallback = Object::of(Value(int64_t{0}));
    if (const Object* d = args.get(0, "default")) fallback = *d;
    if (!input.is_data()) return fallback;
    const Value& v = input.data;
    if (v.is_int()) return input;
    if (v.is_bool()) return Object::of(Value(static_cast<int64_t>(v.as_bool())));
    if (v.is_float()) {
        STORMO_TRY_ASSIGN(auto i, truncated(v.as_double()));
        return i ? Object::of(Value(*i)) : fallback;
    }
    if (!v.is_string()) return fallback;
    int base = 10;
    if (const Object* b = args.get(1, "base"); b && b->is_data() && b->data.is_int()) base = static_cast<int>(b->data.as_int());
    const std::string& s = v.as_string();
    if (base < 0 || base == 1 || base > 36) return tl::unexpected(type_error("int() base must be >= 2 and <= 36, or 0"));
    char* end = nullptr;
    errno = 0;
    long long i = std::strtoll(s.c_str(), &end, base);
    bool out_of_range = errno == ERANGE;
    while (end && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
    if (end && end != s.c_str() && *end == '\0') {
        if (out_of_range) return fail(ErrorKind::unsupported, "int of '" + s + "' is beyond 64-bit integers");
        return Object::of(Value(static_cast<int64_t>(i)));
    }
    double d = std::strtod(s.c_str(), &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
    if (end && end != s.c_str() && *end == '\0') {
        STORMO_TRY_ASSIGN(auto truncated_value, truncated(d));
        if (truncated_value) return Object::of(Value(*truncated_value));
    }
    return fallback;
}

Expected<Object> float_filter(const Object& input, const CallArgs& args) {
    Object fallback = Object::of(Value(0.0));
    if (const Object* d = args.get(0, "default")) fallback = *d;
    if (!input.is_data()) return fallback;
    const Value& v = input.data;
    if (is_number(v)) return Object::of(Value(v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_double()));
    if (!v.is_string()) return fallback;
    char* end = nullptr;
    double d = std::strtod(v.as_string().c_str(), &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
    if (end && end != v.as_string().c_str() && *end == '\0') return Object::of(Value(d));
    return fallback;
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

int64_t word_count(const std::string& s) {
    int64_t n = 0;
    bool in_word = false;
    for (char ch : s) {
        auto c = static_cast<unsigned char>(ch);
        bool word_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
        if (word_char && !in_word) ++n;
        in_word = word_char;
    }
    return n;
}

Expected<Object> length_filter(const Object& input) {
    if (input.is_undefined()) return Object::of(Value(int64_t{0}));
    const Value& v = input.data;
    if (input.is_data() && v.is_string()) return Object::of(Value(static_cast<int64_t>(code_point_count(v.as_string()))));
    if (input.is_data() && v.is_list()) return Object::of(Value(static_cast<int64_t>(v.as_list().size())));
    if (input.is_data() && v.is_object()) return Object::of(Value(static_cast<int64_t>(v.as_object().size())));
    return tl::unexpected(type_error("object of type '" + type_name(input) + "' has no len()"));
}

Expected<Object> string_method_filter(std::string_view method, const Object& input, const CallArgs& args, size_t max_bytes) {
    return call_method(Value(to_text(input)), method, args, max_bytes);
}

Expected<Object> format_filter(const Object& input, const CallArgs& args, size_t max_bytes) {
    if (!args.positional.empty() && !args.keyword.empty())
        return tl::unexpected(type_error("format can't handle positional and keyword arguments at the same time"));
    Value values;
    if (!args.keyword.empty()) {
        values = Value::object();
        for (const auto& [key, value] : args.keyword) {
            STORMO_TRY_ASSIGN(Value v, require_data(value, "format"));
            values.set(key, std::move(v));
        }
    } else {
        ValueList items;
        for (const Object& value : args.positional) {
            STORMO_TRY_ASSIGN(Value v, require_data(value, "format"));
            items.push_back(std::move(v));
        }
        values = Value::tuple(std::move(items));
    }
    STORMO_TRY_ASSIGN(std::string text, percent_format(to_text(input), values, max_bytes));
    return Object::of(Value(std::move(text)));
}

Expected<Object> abs_filter(const Object& input) {
    STORMO_TRY_ASSIGN(Value v, require_data(input, "abs"));
    if (v.is_int()) {
        if (v.as_int() == std::numeric_limits<int64_t>::min()) return fail(ErrorKind::unsupported, "integer overflow in abs() (integers here are 64-bit)");
        return Object::of(Value(v.as_int() < 0 ? -v.as_int() : v.as_int()));
    }
    if (v.is_bool()) return Object::of(Value(static_cast<int64_t>(v.as_bool())));
    if (v.is_float()) return Object::of(Value(v.as_double() < 0 ? -v.as_double() : v.as_double()));
    return tl::unexpected(type_error("bad operand type for abs(): '" + type_name(input) + "'"));
}

}  // namespace

bool is_known_filter(std::string_view name) {
    return std::any_of(known_filters.begin(), known_filters.end(), [&](const char* n) { return name == n; });
}

Expected<Object> apply_filter(std::string_view name, const Object& input, const CallArgs& args, size_t max_bytes) {
    if (name == "default" || name == "d") {
        bool use_default = input.is_undefined() || (flag_arg(args, 1, "boolean", false) && !truthy(input));
        if (!use_default) return input;
        const Object* fallback = args.get(0, "default_value");
        return fallback ? *fallback : Object::of(Value(std::string()));
    }
    if (name == "length" || name == "count") return length_filter(input);
    if (name == "tojson") return tojson_filter(input, args, max_bytes);
    if (name == "string" || name == "safe") return input.is_data() && input.data.is_string() ? input : Object::of(Value(to_text(input)));
    if (name == "trim") return string_method_filter("strip", input, args, max_bytes);
    if (name == "upper" || name == "lower" || name == "capitalize") return string_method_filter(name, input, CallArgs{}, max_bytes);
    if (name == "title") return Object::of(Value(utf8_jinja_title(to_text(input))));
    if (name == "replace") return string_method_filter("replace", input, args, max_bytes);
    if (name == "e" || name == "escape") return Object::of(Value(html_escape(to_text(input))));
    if (name == "wordcount") return Object::of(Value(word_count(to_text(input))));
    if (name == "join") return join_filter(input, args, max_bytes);
    if (name == "first" || name == "last" || name == "list" || name == "reverse") return sequence_filter(name, input);
    if (name == "items") return items_filter(input);
    if (name == "selectattr" || name == "rejectattr") return select_filter(input, args, true, name == "selectattr");
    if (name == "select" || name == "reject") return select_filter(input, args, false, name == "select");
    if (name == "map") return map_filter(input, args, max_bytes);
    if (name == "unique") return unique_filter(input, args);
    if (name == "sort") return sort_filter(input, args);
    if (name == "min" || name == "max") return extreme_filter(input, args, name == "max");
    if (name == "sum") return sum_filter(input, args, max_bytes);
    if (name == "int") return int_filter(input, args);
    if (name == "float") return float_filter(input, args);
    if (name == "abs") return abs_filter(input);
    if (name == "dictsort") return dictsort_filter(input, args);
    if (name == "format") return format_filter(input, args, max_bytes);
    if (name == "indent") return indent_filter(input, args, max_bytes);
    return fail(ErrorKind::unsupported, "unsupported filter '" + std::string(name) + "'");
}

}  // namespace stormo::text::jinja
