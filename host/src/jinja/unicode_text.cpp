// Case mapping and whitespace over code points with utf8proc.
#include "jinja/unicode_text.hpp"

#include <utf8proc.h>

namespace stormo::text {
namespace {

// Calls `map(code_point, index)` for each character and writes what it returns; bytes that are
// not valid UTF-8 are copied as they are.
template <class Map>
std::string map_code_points(std::string_view s, Map map) {
    std::string out;
    out.reserve(s.size());
    size_t index = 0;
    for (size_t i = 0; i < s.size();) {
        utf8proc_int32_t cp = 0;
        auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                  static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
        if (n <= 0) {
            out += s[i++];
            continue;
        }
        utf8proc_uint8_t buf[4];
        auto written = utf8proc_encode_char(map(cp, index++), buf);
        out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(written));
        i += static_cast<size_t>(n);
    }
    return out;
}

bool is_letter(utf8proc_int32_t cp) {
    switch (utf8proc_category(cp)) {
        case UTF8PROC_CATEGORY_LU:
        case UTF8PROC_CATEGORY_LL:
        case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM:
        case UTF8PROC_CATEGORY_LO: return true;
        default: return false;
    }
}

bool is_jinja_word_boundary(utf8proc_int32_t cp) {
    return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' ||
           utf8proc_category(cp) == UTF8PROC_CATEGORY_ZS || (cp >= 0x09 && cp <= 0x0D) || cp == 0x1C ||
           cp == 0x1D || cp == 0x1E || cp == 0x1F || cp == 0x85;
}

}  // namespace

std::string utf8_upper(std::string_view s) {
    return map_code_points(s, [](utf8proc_int32_t cp, size_t) { return utf8proc_toupper(cp); });
}

std::string utf8_lower(std::string_view s) {
    return map_code_points(s, [](utf8proc_int32_t cp, size_t) { return utf8proc_tolower(cp); });
}

std::string utf8_capitalize(std::string_view s) {
    return map_code_points(s, [](utf8proc_int32_t cp, size_t index) {
        return index == 0 ? utf8proc_totitle(cp) : utf8proc_tolower(cp);
    });
}

std::string utf8_python_title(std::string_view s) {
    bool previous_letter = false;
    return map_code_points(s, [&](utf8proc_int32_t cp, size_t) {
        utf8proc_int32_t mapped = previous_letter ? utf8proc_tolower(cp) : utf8proc_totitle(cp);
        previous_letter = is_letter(cp);
        return mapped;
    });
}

std::string utf8_jinja_title(std::string_view s) {
    bool word_start = true;
    return map_code_points(s, [&](utf8proc_int32_t cp, size_t) {
        bool boundary = is_jinja_word_boundary(cp);
        utf8proc_int32_t mapped = boundary ? cp : word_start ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
        word_start = boundary;
        return mapped;
    });
}

bool is_python_space(std::string_view character) {
    utf8proc_int32_t cp = 0;
    auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(character.data()),
                              static_cast<utf8proc_ssize_t>(character.size()), &cp);
    if (n <= 0 || static_cast<size_t>(n) != character.size()) return false;
    if ((cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85) return true;
    auto category = utf8proc_category(cp);
    // Python: the Zs, Zl and Zp categories and the bidirectional classes WS, B and S.
    if (category == UTF8PROC_CATEGORY_ZS || category == UTF8PROC_CATEGORY_ZL || category == UTF8PROC_CATEGORY_ZP) return true;
    auto bidi = utf8proc_get_property(cp)->bidi_class;
    return bidi == UTF8PROC_BIDI_CLASS_WS || bidi == UTF8PROC_BIDI_CLASS_B || bidi == UTF8PROC_BIDI_CLASS_S;
}

bool is_python_printable(int32_t code_point) {
    if (code_point == ' ') return true;
    switch (utf8proc_category(code_point)) {
        case UTF8PROC_CATEGORY_CC:
        case UTF8PROC_CATEGORY_CF:
        case UTF8PROC_CATEGORY_CS:
        case UTF8PROC_CATEGORY_CO:
        case UTF8PROC_CATEGORY_CN:
        case UTF8PROC_CATEGORY_ZL:
        case UTF8PROC_CATEGORY_ZP:
        case UTF8PROC_CATEGORY_ZS: return false;
        default: return true;
    }
}

}  // namespace stormo::text
