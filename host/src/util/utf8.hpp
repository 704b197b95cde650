#pragma once
// UTF-8 helpers for the tokenizer: decoding one code point, rendering arbitrary bytes as text the
// way Rust's String::from_utf8_lossy does (each maximal invalid subpart becomes one U+FFFD), and
// finding an incomplete sequence at the end of a byte string (what a stream decoder holds back).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stormo::text::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Appends code point `cp` encoded as UTF-8.
inline void append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// The outcome of reading one sequence at a position: `length` bytes were consumed; `valid` says
// whether they form a character; `truncated` says the bytes ran out while the sequence was still
// a valid prefix (so more bytes could complete it).
struct Step {
    size_t length = 0;
    char32_t cp = 0;
    bool valid = false;
    bool truncated = false;
};

// Reads the sequence at s[i] under the Unicode "maximal subpart" rule (the rule from_utf8_lossy
// follows): an invalid sequence consumes its longest valid prefix, at least one byte.
inline Step read(std::string_view s, size_t i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) return {1, b0, true, false};
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    char32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1, cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2, cp = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;  // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3, cp = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
        return {1, 0, false, false};
    }
    size_t k = 1;
    for (; k <= need; ++k) {
        if (i + k >= s.size()) return {k, 0, false, true};
        const auto b = static_cast<unsigned char>(s[i + k]);
        const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
        if (!ok) return {k, 0, false, false};
        cp = (cp << 6) | (b & 0x3F);
    }
    return {k, cp, true, false};
}

// `bytes` as valid UTF-8, each maximal invalid subpart replaced by U+FFFD.
inline std::string lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (size_t i = 0; i < bytes.size();) {
        const Step st = read(bytes, i);
        if (st.valid)
            out.append(bytes.substr(i, st.length));
        else
            out.append(kReplacement);
        i += st.length;
    }
    return out;
}

inline bool is_valid(std::string_view bytes) {
    for (size_t i = 0; i < bytes.size();) {
        const Step st = read(bytes, i);
        if (!st.valid) return false;
        i += st.length;
    }
    return true;
}

// How many bytes at the end of `bytes` are the start of a sequence that more bytes could
// complete (0 when the string ends on a character or an invalid subpart).
inline size_t incomplete_tail(std::string_view bytes) {
    // A sequence is at most 4 bytes, so only the last 3 can start an unfinished one.
    const size_t from = bytes.size() > 3 ? bytes.size() - 3 : 0;
    for (size_t i = from; i < bytes.size(); ++i) {
        const auto b = static_cast<unsigned char>(bytes[i]);
        if (b >= 0x80 && b <= 0xBF) continue;  // a continuation byte cannot start a sequence
        const Step st = read(bytes, i);
        if (st.truncated) return bytes.size() - i;
        if (i + st.length >= bytes.size()) return 0;
    }
    return 0;
}

}  // namespace stormo::text::utf8
