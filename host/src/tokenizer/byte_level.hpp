#pragma once
// GPT-2's byte-level alphabet: every byte stands for one printable code point, so BPE can work on
// text made of "characters" while covering arbitrary bytes. Bytes that are printable Latin-1
// ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68 take U+0100 upwards in byte
// order (the space is 'Ġ' U+0120, the newline 'Ċ' U+010A).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stormo::text {

class ByteLevelAlphabet {
public:
    // The table, built once (it is immutable).
    static const ByteLevelAlphabet& get();

    char32_t code_point(uint8_t byte) const { return to_char_[byte]; }
    // The UTF-8 of the code point byte `b` stands for.
    std::string_view utf8(uint8_t byte) const { return {encoded_[byte].data(), encoded_len_[byte]}; }
    // The byte a code point stands for, if it is one of the 256.
    std::optional<uint8_t> byte_of(char32_t cp) const {
        if (cp >= from_char_.size() || from_char_[cp] < 0) return std::nullopt;
        return static_cast<uint8_t>(from_char_[cp]);
    }

    // `bytes` spelled in the alphabet (each byte becomes one code point).
    void encode(std::string_view bytes, std::string& out) const;
    // The bytes a token spells, if every character of it is in the alphabet (the reference decoder
    // keeps a token's own UTF-8 otherwise).
    std::optional<std::string> decode(std::string_view token) const;

private:
    ByteLevelAlphabet();
    std::array<char32_t, 256> to_char_{};
    std::array<std::array<char, 2>, 256> encoded_{};
    std::array<uint8_t, 256> encoded_len_{};
    std::array<int16_t, 0x144> from_char_{};  // every code point of the alphabet is below U+0144
};

}  // namespace stormo::text
