#pragma once
// Names in error messages are quoted: "model.norm.weight". Header-only, in the SDK so the family
// toolkit quotes names from files as the host does.
#include <string>
#include <string_view>

namespace stormo {

// Bytes from a file or the user, safe to print in a one-line error: control characters, DEL and
// bytes outside ASCII become \xNN (no terminal escape sequence gets through, nor invalid UTF-8),
// and more than max_chars are cut with "... (N bytes)", N the whole length, so a 10 MB value costs
// one short line.
inline std::string printable(std::string_view s, size_t max_chars = 64) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (i == max_chars) {
            out += "... (";
            out += std::to_string(s.size());
            out += " bytes)";
            break;
        }
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

// Names in errors often come from files (tensor names in a safetensors header): quoted and made
// printable, so a crafted name cannot move the cursor or recolour the terminal.
// Appends rather than `"\"" + s`: g++ 12 warns falsely (-Wrestrict) on a literal + std::string.
inline std::string in_quotes(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    out += printable(s, std::string_view::npos);
    out += '"';
    return out;
}

// printable(s) in quotes.
inline std::string quoted_printable(std::string_view s, size_t max_chars = 64) {
    std::string out = printable(s, max_chars);
    out.insert(out.begin(), '"');
    out += '"';
    return out;
}

}  // namespace stormo
