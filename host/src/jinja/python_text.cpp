// Python's str() and repr() of JSON-shaped values.
#include "jinja/python_text.hpp"

#include "jinja/unicode_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace stormo::text {
namespace {

// Splits std::to_chars' shortest scientific form ("-1.25e-05") into its digits ("125") and the
// decimal point's position relative to them (value = 0.DIGITS * 10^point).
struct ShortestDigits {
    bool negative = false;
    std::string digits;
    int point = 0;
};

ShortestDigits shortest_digits(double d) {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string_view text(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
    ShortestDigits out;
    size_t i = 0;
    if (i < text.size() && text[i] == '-') {
        out.negative = true;
        ++i;
    }
    for (; i < text.size() && text[i] != 'e'; ++i)
        if (text[i] != '.') out.digits += text[i];
    int exponent = 0;
    if (i < text.size()) exponent = std::atoi(std::string(text.substr(i + 1)).c_str());
    while (out.digits.size() > 1 && out.digits.back() == '0') out.digits.pop_back();
    out.point = exponent + 1;
    return out;
}

std::string fixed_form(const std::string& digits, int point) {
    if (point <= 0) return "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    auto p = static_cast<size_t>(point);
    if (p >= digits.size()) return digits + std::string(p - digits.size(), '0') + ".0";
    return digits.substr(0, p) + "." + digits.substr(p);
}

std::string scientific_form(const std::string& digits, int point) {
    std::string out(1, digits[0]);
    if (digits.size() > 1) {
        out += '.';
        out += digits.substr(1);
    }
    int exponent = point - 1;
    char buf[16];
    std::snprintf(buf, sizeof buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + buf;
}

// Python's escape for a non-printable code point: \xNN, \uNNNN or \UNNNNNNNN.
void append_code_point_escape(std::string& out, uint32_t cp) {
    char buf[16];
    if (cp < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", cp);
    else if (cp < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    else std::snprintf(buf, sizeof buf, "\\U%08x", cp);
    out += buf;
}

// The code point of the UTF-8 sequence at s[i] and its length; 0 when the bytes are not UTF-8.
size_t decode_utf8(std::string_view s, size_t i, uint32_t& cp) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || i + len > s.size()) return 0;
    cp = c & (0xFFu >> (len + 1));
    for (size_t k = 1; k < len; ++k) {
        auto next = static_cast<unsigned char>(s[i + k]);
        if ((next & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (next & 0x3Fu);
    }
    return len;
}

}  // namespace

std::string python_float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    ShortestDigits s = shortest_digits(d);
    // Python's float_repr_style 'short': positional while -4 < point <= 16.
    std::string body = (s.point > -4 && s.point <= 16) ? fixed_form(s.digits, s.point)
                                                        : scientific_form(s.digits, s.point);
    if (s.negative) body.insert(0, 1, '-');
    return body;
}

std::string python_string_repr(std::string_view s) {
    bool has_single = s.find('\'') != std::string_view::npos;
    bool has_double = s.find('"') != std::string_view::npos;
    char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    for (size_t i = 0; i < s.size();) {
        char ch = s[i];
        auto c = static_cast<unsigned char>(ch);
        uint32_t cp = 0;
        size_t len = c >= 0x80 ? decode_utf8(s, i, cp) : 0;
        if (len > 0) {
            if (is_python_printable(static_cast<int32_t>(cp))) out.append(s.substr(i, len));
            else append_code_point_escape(out, cp);
            i += len;
            continue;
        }
        ++i;
        if (ch == '\\') out += "\\\\";
        else if (ch == quote) (out += '\\') += ch;
        else if (ch == '\n') out += "\\n";
        else if (ch == '\r') out += "\\r";
        else if (ch == '\t') out += "\\t";
        else if (c < 0x20 || c >= 0x7f) append_code_point_escape(out, c);
        else out += ch;
    }
    out += quote;
    return out;
}

std::string python_str(const Value& v) {
    if (v.is_null()) return "None";
    if (v.is_bool()) return v.as_bool() ? "True" : "False";
    if (v.is_int()) return std::to_string(v.as_int());
    if (v.is_float()) return python_float_repr(v.as_double());
    if (v.is_string()) return v.as_string();
    if (v.is_list()) {
        std::string out(1, v.is_tuple() ? '(' : '[');
        const char* sep = "";
        for (const Value& item : v.as_list()) {
            (out += sep) += python_repr(item);
            sep = ", ";
        }
        if (v.is_tuple() && v.as_list().size() == 1) out += ',';
        out += v.is_tuple() ? ')' : ']';
        return out;
    }
    std::string out(1, '{');
    const char* sep = "";
    for (const auto& [key, member] : v.as_object()) {
        (out += sep) += python_string_repr(key);
        (out += ": ") += python_repr(member);
        sep = ", ";
    }
    return out + "}";
}

std::string python_repr(const Value& v) {
    return v.is_string() ? python_string_repr(v.as_string()) : python_str(v);
}

}  // namespace stormo::text
