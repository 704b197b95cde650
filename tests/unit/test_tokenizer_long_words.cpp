// Long words are encoded a window at a time so their memory stays bounded (bpe.cpp). These
// tests hold the windowed result to the whole-word one (the reference's algorithm, which the
// reference tests check) on the real tokenizers' merges, with windows small enough that a word
// of a few kilobytes crosses hundreds of them, and count the buffers to show they stay small.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_impl.hpp"
#include "tokenizer_reference_support.hpp"

namespace {

using stormo::test::ids_to_string;
using stormo::test::kTokenizerData;
using stormo::text::BpeCache;
using stormo::text::ByteLevelAlphabet;
using stormo::text::TokenizerData;

const TokenizerData& reference_data(const std::string& name) {
    static std::map<std::string, std::unique_ptr<TokenizerData>> loaded;
    auto& slot = loaded[name];
    if (!slot) {
        auto data = stormo::text::load_tokenizer_json(kTokenizerData + "/" + name + "/tokenizer.json");
        if (!data) throw std::runtime_error(data.error().message);
        slot = std::move(*data);
    }
    return *slot;
}

// Words as BPE sees them from a byte-level pre-tokenizer: bytes spelled in the alphabet.
std::string spelled(const std::string& bytes) {
    std::string out;
    ByteLevelAlphabet::get().encode(bytes, out);
    return out;
}

std::string random_from(const std::string& alphabet, size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
    std::string s;
    for (size_t i = 0; i < n; ++i) s += alphabet[pick(rng)];
    return s;
}

std::string repeated(const std::string& unit, size_t n) {
    std::string s;
    while (s.size() < n) s += unit;
    return s;
}

std::vector<std::string> long_words() {
    const std::string lower = "abcdefghijklmnopqrstuvwxyz";
    std::string bytes;
    for (int b = 0; b < 256; ++b) bytes += static_cast<char>(b);
    std::vector<std::string> words = {
        repeated("a", 4001),
        repeated("ab", 3000),
        repeated("the", 3000),
        repeated("\xd0\xb0", 3000),  // Cyrillic a
        repeated("\xe4\xb8\x80", 3000),  // CJK one
        repeated(" ", 3000),
        repeated("0", 3000),
        repeated("=-", 3000),
        random_from(lower, 4000, 1),
        random_from(lower + "ABCDEFGHIJKLMNOPQRSTUVWXYZ", 4000, 2),
        random_from("aeiou", 4000, 3),
        random_from("ab", 4000, 4),
        random_from("a ", 4000, 5),
        random_from(bytes, 4000, 6),
        random_from("aaaaaaaab", 4000, 8),
        random_from("  \n\t.,;:!?-_=+*/\\'\"()[]{}<>", 4000, 9),
        random_from("0123456789", 4000, 10),
    };
    for (std::string& w : words) w = spelled(w);
    return words;
}

class TokenizerLongWords : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerLongWords, WindowsGiveTheWholeWordsIds) {
    const auto& bpe = reference_data(GetParam()).model;
    for (const std::string& word : long_words()) {
        BpeCache whole;
        whole.window_bytes = std::numeric_limits<size_t>::max();
        std::vector<int32_t> expected;
        bpe.encode_word(word, whole, expected);
        for (const size_t window : {size_t{257}, size_t{1000}}) {
            BpeCache windowed;
            windowed.window_bytes = window;
            std::vector<int32_t> ids;
            bpe.encode_word(word, windowed, ids);
            ASSERT_EQ(ids_to_string(ids), ids_to_string(expected))
                << GetParam() << ", window " << window << ", word starting " << word.substr(0, 24);
            // The buffers held one window's symbols at most (so a window settled something every
            // time and never had to widen to the word), not the word's thousands.
            EXPECT_LE(windowed.ids.capacity(), 2 * window) << GetParam() << ", window " << window << ", word starting "
                                                           << word.substr(0, 24);
        }
    }
}

// The whole path (pre-tokenizer, then a word past the default window) gives the unwindowed ids.
TEST_P(TokenizerLongWords, EncodeOfOneLongWordMatchesTheWholeWord) {
    const auto& data = reference_data(GetParam());
    const std::string text = random_from("abcdefghijklmnopqrstuvwxyz", (size_t{1} << 18) + 5000, 7);
    ASSERT_GT(text.size(), BpeCache{}.window_bytes);
    BpeCache whole;
    whole.window_bytes = std::numeric_limits<size_t>::max();
    std::vector<int32_t> expected;
    data.model.encode_word(spelled(text), whole, expected);
    EXPECT_EQ(ids_to_string(stormo::test::reference_tokenizer(GetParam()).encode(text, true)), ids_to_string(expected)) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Real, TokenizerLongWords, ::testing::Values("gpt-oss", "qwen3"));

// Random small vocabularies with merges in any order (not training's, some listed twice), unknown
// characters dropped, unk'd or fused, and windows a few characters wide: the rule that settles a
// window holds for any merge list, not just trained ones.
TEST(TokenizerLongWordsAnyMerges, WindowsGiveTheWholeWordsIds) {
    std::mt19937 rng(777);
    size_t bounded = 0, total = 0;
    for (int iter = 0; iter < 600; ++iter) {
        std::vector<std::string> vocab = {"a", "b", "c"};
        const size_t nalpha = 2 + rng() % 2;
        vocab.resize(nalpha);
        const auto unk_mode = rng() % 3;  // 0: none (dropped), 1: unk, 2: fused unk
        if (unk_mode) vocab.push_back("<u>");
        std::vector<std::pair<std::string, std::string>> merges;
        const size_t nm = 1 + rng() % 25;
        for (size_t tries = 0; tries < nm * 3 && merges.size() < nm; ++tries) {
            const std::string& x = vocab[rng() % vocab.size()];
            const std::string& y = vocab[rng() % vocab.size()];
            if (x.size() + y.size() > 7) continue;
            bool dup = false;
            for (const auto& m : merges) dup |= (m.first == x && m.second == y);
            if (dup) continue;
            merges.emplace_back(x, y);
            const std::string j = x + y;
            if (std::find(vocab.begin(), vocab.end(), j) == vocab.end()) vocab.push_back(j);
        }
        std::shuffle(merges.begin(), merges.end(), rng);  // any order, not training's
        if (rng() % 3 == 0 && !merges.empty()) merges.push_back(merges[rng() % merges.size()]);  // listed twice
        stormo::text::BpeConfig config;
        config.id_to_token = vocab;
        if (unk_mode) config.unk_token = "<u>";
        config.fuse_unk = unk_mode == 2;
        for (const auto& m : merges) config.merges.emplace_back(m.first, m.second);
        auto bpe = stormo::text::Bpe::build(config, "t");
        ASSERT_TRUE(bpe) << bpe.error().message;
        for (int wi = 0; wi < 5; ++wi) {
            std::string w;
            const size_t len = 50 + rng() % 300;
            const size_t sub = 1 + rng() % (nalpha + 1);
            for (size_t i = 0; i < len; ++i) w += static_cast<char>('a' + rng() % sub);
            if (rng() % 2)  // an unknown character of its own, not the next letter
                for (char& ch : w)
                    if (ch == 'a' + static_cast<char>(nalpha)) ch = 'x';
            BpeCache whole;
            whole.window_bytes = std::numeric_limits<size_t>::max();
            std::vector<int32_t> expected;
            bpe->encode_word(w, whole, expected);
            for (const size_t window : {size_t{5}, size_t{9}, size_t{20}, size_t{47}}) {
                BpeCache windowed;
                windowed.window_bytes = window;
                std::vector<int32_t> ids;
                bpe->encode_word(w, windowed, ids);
                ASSERT_EQ(ids_to_string(ids), ids_to_string(expected)) << iter << " window " << window << " word " << w;
                ++total;
                if (windowed.ids.capacity() <= 2 * window) ++bounded;
            }
        }
    }
    // Most windows settle something (a word made of one long token cannot).
    EXPECT_GT(bounded, total * 3 / 4);
}

}  // namespace
