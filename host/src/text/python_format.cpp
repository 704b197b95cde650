// printf-style formatting with Python's rules for which value a conversion takes.
#include "text/python_format.hpp"

#include <cstdio>
#include <vector>

#include "text/python_text.hpp"

namespace stormo::text {
namespace {

Error format_error(std::string message) { return Error{ErrorKind::invalid_argument, std::move(message)}; }

struct Spec {
    std::string key;    // %(key)s
    std::string flags;  // of "-+ 0#"
    int width = -1;
    int precision = -1;
    char conversion = 's';
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

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
Expected<Spec> parse_spec(std::string_view format, size_t& i) {
    Spec spec;
    if (i < format.size() && format[i] == '(') {
        size_t close = format.find(')', i);
        if (close == std::string_view::npos) return tl::unexpected(format_error("incomplete format key"));
        spec.key = std::string(format.substr(i + 1, close - i - 1));
        i = close + 1;
    }
    while (i < format.size() && std::string_view("-+ 0#").find(format[i]) != std::string_view::npos) spec.flags += format[i++];
    if (i < format.size() && is_digit(format[i])) {
        spec.width = 0;
        while (i < format.size() && is_digit(format[i])) spec.width = spec.width * 10 + (format[i++] - '0');
    }
    if (i < format.size() && format[i] == '.') {
        ++i;
        spec.precision = 0;
        while (i < format.size() && is_digit(format[i])) spec.precision = spec.precision * 10 + (format[i++] - '0');
    }
    if (i < format.size() && (format[i] == 'l' || format[i] == 'h' || format[i] == 'L')) ++i;  // length modifiers are ignored
    if (i >= format.size()) return tl::unexpected(format_error("incomplete format"));
    spec.conversion = format[i++];
    return spec;
}

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

Expected<std::string> format_one(const Spec& spec, const Value& v) {
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
    char buf[512];
    if (c == 'd' || c == 'i' || c == 'u' || c == 'x' || c == 'X' || c == 'o') {
        if (v.is_float() && (c == 'x' || c == 'X' || c == 'o'))
            return tl::unexpected(format_error(std::string("%") + c + " format: an integer is required, not float"));
        long long i = v.is_bool() ? v.as_bool() : v.is_int() ? v.as_int() : static_cast<long long>(v.as_double());
        std::snprintf(buf, sizeof buf, c_format(spec, c == 'i' || c == 'u' ? 'd' : c, "ll").c_str(), i);
        return std::string(buf);
    }
    if (c == 'f' || c == 'F' || c == 'e' || c == 'E' || c == 'g' || c == 'G') {
        std::snprintf(buf, sizeof buf, c_format(spec, c, "").c_str(), v.as_double());
        return std::string(buf);
    }
    return tl::unexpected(format_error(std::string("unsupported format character '") + c + "'"));
}

}  // namespace

Expected<std::string> percent_format(std::string_view format, const Value& args) {
    std::vector<Value> positional;
    if (args.is_tuple()) positional = args.as_list();
    else positional.push_back(args);
    size_t next = 0;
    bool used_mapping = false;
    std::string out;
    for (size_t i = 0; i < format.size();) {
        if (format[i] != '%') {
            out += format[i++];
            continue;
        }
        ++i;
        if (i < format.size() && format[i] == '%') {
            out += '%';
            ++i;
            continue;
        }
        STORMO_TRY_ASSIGN(Spec spec, parse_spec(format, i));
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
        STORMO_TRY_ASSIGN(std::string piece, format_one(spec, *value));
        out += piece;
    }
    if (!used_mapping && args.is_tuple() && next < positional.size())
        return tl::unexpected(format_error("not all arguments converted during string formatting"));
    if (!used_mapping && !args.is_tuple() && next == 0 && !args.is_object())
        return tl::unexpected(format_error("not all arguments converted during string formatting"));
    return out;
}

}  // namespace stormo::text
