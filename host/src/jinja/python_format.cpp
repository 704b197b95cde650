// printf-style formatting with Python's rules for which value a conversion takes.
#include "jinja/python_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "jinja/python_text.hpp"

namespace stormo::text {
namespace {

Error format_error(std::string message) { return Error{ErrorKind::invalid_argument, std::move(message)}; }

Error too_long(std::string_view what, size_t max_bytes) {
    return Error{ErrorKind::resource, std::string(what) + " larger than " + std::to_string(max_bytes) +
                                          " bytes (the rendered output's limit)"};
}

struct Spec {
    std::string key;    // %(key)s
    std::string flags;  // of "-+ 0#"
    int width = -1;
    int precision = -1;
    char conversion = 's';
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A width or precision: digits up to max_bytes (a larger one could only build text past the
// output limit, and would overflow an int first).
Expected<int> spec_number(std::string_view format, size_t& i, const char* what, size_t max_bytes) {
    uint64_t n = 0;
    while (i < format.size() && is_digit(format[i])) {
        n = n * 10 + static_cast<uint64_t>(format[i++] - '0');
        if (n > max_bytes || n > 1'000'000'000) return tl::unexpected(too_long(std::string("format ") + what, max_bytes));
    }
    return static_cast<int>(n);
}

std::string type_of(const Value& v) {
    if (v.is_null()) return "NoneType";
    if (v.is_bool()) return "bool";
    if (v.is_int()) return "int";
    if (v.is_float()) return "float";
    if (v.is_string()) return "str";
    if (v.is_list()) return v.is_tuple() ? "tuple" : "list";
    return "dict";
}

// Parses the conversion spec after '%' at format[i]; i ends past the conversion character.
Expected<Spec> parse_spec(std::string_view format, size_t& i, size_t max_bytes) {
    Spec spec;
    if (i < format.size() && format[i] == '(') {
        size_t close = format.find(')', i);
        if (close == std::string_view::npos) return tl::unexpected(format_error("incomplete format key"));
        spec.key = std::string(format.substr(i + 1, close - i - 1));
        i = close + 1;
    }
    while (i < format.size() && std::string_view("-+ 0#").find(format[i]) != std::string_view::npos) spec.flags += format[i++];
    if (i < format.size() && is_digit(format[i])) {
        STORMO_TRY_ASSIGN(spec.width, spec_number(format, i, "width", max_bytes));
    }
    if (i < format.size() && format[i] == '.') {
        ++i;
        STORMO_TRY_ASSIGN(spec.precision, spec_number(format, i, "precision", max_bytes));
    }
    if (i < format.size() && (format[i] == 'l' || format[i] == 'h' || format[i] == 'L')) ++i;  // length modifiers are ignored
    if (i >= format.size()) return tl::unexpected(format_error("incomplete format"));
    spec.conversion = format[i++];
    return spec;
}

Expected<void> append(std::string& out, std::string_view piece, size_t max_bytes) {
    if (piece.size() > max_bytes || out.size() > max_bytes - piece.size()) return tl::unexpected(too_long("formatted string", max_bytes));
    out += piece;
    return {};
}

// The width is at most max_bytes (spec_number), so the padding is bounded before it is built.
std::string pad(std::string text, const Spec& spec) {
    auto length = static_cast<int>(text.size());
    if (spec.width <= length) return text;
    std::string fill(static_cast<size_t>(spec.width - length), ' ');
    return spec.flags.find('-') != std::string::npos ? text + fill : fill + text;
}

// Numbers go through C's printf, whose conversions Python's follow.
std::string c_format(const Spec& spec, char conversion, const char* length) {
    std::string f(1, '%');
    f += spec.flags;
    if (spec.width >= 0) f += std::to_string(spec.width);
    if (spec.precision >= 0) {
        f += '.';
        f += std::to_string(spec.precision);
    }
    f += length;
    f += conversion;
    return f;
}

// C's snprintf into a buffer of the size it asks for: a fixed buffer would cut a wide field short.
template <class T>
Expected<std::string> c_formatted(const std::string& c_spec, T value, size_t max_bytes) {
    int n = std::snprintf(nullptr, 0, c_spec.c_str(), value);
    if (n < 0) return tl::unexpected(format_error("cannot format with " + c_spec));
    if (static_cast<size_t>(n) > max_bytes) return tl::unexpected(too_long("formatted number", max_bytes));
    std::string out(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(out.data(), out.size(), c_spec.c_str(), value);
    out.pop_back();
    return out;
}

// %d of a float truncates it, as Python's int() does; one beyond int64 would be Python's big int.
Expected<long long> integer_of(const Value& v) {
    if (v.is_bool()) return v.as_bool() ? 1 : 0;
    if (v.is_int()) return v.as_int();
    double d = v.as_double();
    if (std::isnan(d)) return tl::unexpected(format_error("cannot convert float NaN to integer"));
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return fail(ErrorKind::unsupported, "%d of a float beyond 64-bit integers (not supported)");
    return static_cast<long long>(d);
}

Expected<std::string> format_one(const Spec& spec, const Value& v, size_t max_bytes) {
    char c = spec.conversion;
    if (c == 's' || c == 'r' || c == 'a') {
        std::string text = c == 's' ? python_str(v) : python_repr(v);
        if (spec.precision >= 0 && static_cast<size_t>(spec.precision) < text.size()) text.resize(static_cast<size_t>(spec.precision));
        return pad(std::move(text), spec);
    }
    if (c == 'c') {
        if (v.is_string() && v.as_string().size() >= 1) return pad(v.as_string(), spec);
        if (v.is_int() && v.as_int() >= 0 && v.as_int() < 128) return pad(std::string(1, static_cast<char>(v.as_int())), spec);
        return tl::unexpected(format_error("%c requires an int or a char"));
    }
    bool numeric = v.is_int() || v.is_float() || v.is_bool();
    if (!numeric) {
        std::string what = std::string("%") + c + " format: a real number is required, not " + type_of(v);
        if (c == 'x' || c == 'X' || c == 'o') what = std::string("%") + c + " format: an integer is required, not " + type_of(v);
        return tl::unexpected(format_error(what));
    }
    if (c == 'd' || c == 'i' || c == 'u' || c == 'x' || c == 'X' || c == 'o') {
        if (v.is_float() && (c == 'x' || c == 'X' || c == 'o'))
            return tl::unexpected(format_error(std::string("%") + c + " format: an integer is required, not float"));
        STORMO_TRY_ASSIGN(long long i, integer_of(v));
        return c_formatted(c_format(spec, c == 'i' || c == 'u' ? 'd' : c, "ll"), i, max_bytes);
    }
    if (c == 'f' || c == 'F' || c == 'e' || c == 'E' || c == 'g' || c == 'G')
        return c_formatted(c_format(spec, c, ""), v.as_double(), max_bytes);
    return tl::unexpected(format_error(std::string("unsupported format character '") + c + "'"));
}

}  // namespace

Expected<std::string> percent_format(std::string_view format, const Value& args, size_t max_bytes) {
    std::vector<Value> positional;
    if (args.is_tuple()) positional = args.as_list();
    else positional.push_back(args);
    size_t next = 0;
    bool used_mapping = false;
    std::string out;
    for (size_t i = 0; i < format.size();) {
        if (format[i] != '%') {
            size_t next_percent = std::min(format.find('%', i), format.size());
            STORMO_TRY(append(out, format.substr(i, next_percent - i), max_bytes));
            i = next_percent;
            continue;
        }
        ++i;
        if (i < format.size() && format[i] == '%') {
            out += '%';
            ++i;
            continue;
        }
        STORMO_TRY_ASSIGN(Spec spec, parse_spec(format, i, max_bytes));
        const Value* value = nullptr;
        if (!spec.key.empty()) {
            if (!args.is_object()) return tl::unexpected(format_error("format requires a mapping"));
            value = args.find(spec.key);
            if (!value) return tl::unexpected(format_error("KeyError: " + python_string_repr(spec.key)));
            used_mapping = true;
        } else {
            if (next >= positional.size()) return tl::unexpected(format_error("not enough arguments for format string"));
            value = &positional[next++];
        }
        STORMO_TRY_ASSIGN(std::string piece, format_one(spec, *value, max_bytes));
        STORMO_TRY(append(out, piece, max_bytes));
    }
    if (!used_mapping && args.is_tuple() && next < positional.size())
        return tl::unexpected(format_error("not all arguments converted during string formatting"));
    if (!used_mapping && !args.is_tuple() && next == 0 && !args.is_object())
        return tl::unexpected(format_error("not all arguments converted during string formatting"));
    return out;
}

}  // namespace stormo::text
