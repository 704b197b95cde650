#include "tokenizer/byte_level.hpp"

#include "util/utf8.hpp"

namespace stormo::text {

namespace {

bool stands_for_itself(unsigned b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

}  // namespace

const ByteLevelAlphabet& ByteLevelAlphabet::get() {
    static const ByteLevelAlphabet alphabet;
    return alphabet;
}

ByteLevelAlphabet::ByteLevelAlphabet() {
    from_char_.fill(-1);
    char32_t next = 0x100;  // the bytes that are not printable take code points from U+0100 on
    for (unsigned b = 0; b < 256; ++b) {
        const char32_t cp = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
        to_char_[b] = cp;
        from_char_[cp] = static_cast<int16_t>(b);
        std::string s;
        utf8::append(s, cp);
        encoded_len_[b] = static_cast<uint8_t>(s.size());
        for (size_t i = 0; i < s.size(); ++i) encoded_[b][i] = s[i];
    }
}

void ByteLevelAlphabet::encode(std::string_view bytes, std::string& out) const {
    // Each byte becomes one or two bytes of UTF-8; written through a pointer because appending
    // a string_view per byte costs a memcpy call each.
    const size_t start = out.size();
    out.resize(start + 2 * bytes.size());
    char* p = out.data() + start;
    for (const char c : bytes) {
        const auto b = static_cast<uint8_t>(c);
        *p++ = encoded_[b][0];
        if (encoded_len_[b] == 2) *p++ = encoded_[b][1];
    }
    out.resize(static_cast<size_t>(p - out.data()));
}

std::optional<std::string> ByteLevelAlphabet::decode(std::string_view token) const {
    std::string out;
    out.reserve(token.size());
    for (size_t i = 0; i < token.size();) {
        const utf8::Step st = utf8::read(token, i);
        if (!st.valid) return std::nullopt;
        const auto byte = byte_of(st.cp);
        if (!byte) return std::nullopt;
        out += static_cast<char>(*byte);
        i += st.length;
    }
    return out;
}

}  // namespace stormo::text
