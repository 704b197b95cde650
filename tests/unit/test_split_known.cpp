// The known split patterns, matched by hand in O(1) memory a character (tokenizer/split_known.cpp),
// give Oniguruma's pieces: on random text over every character class the patterns tell apart
// (letters of each case class, marks, digits of each kind, every kind of space, the contraction
// letters and their Unicode case folds), and on the long runs whose matches depend on a character
// far ahead. The tokenizer references (test_tokenizer_reference.cpp) run through them too.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.hpp"

namespace stormo::text {
namespace {

std::vector<std::string_view> patterns() { return {kGpt2Pattern, kLlama3Pattern, kQwen2Pattern, kO200kPattern}; }

std::vector<std::string> pieces(const SplitRegex& r, std::string_view text, bool by_regex) {
    std::vector<std::string> out;
    const auto keep = [&](std::string_view p) { out.emplace_back(p); };
    if (by_regex) r.split_isolated_by_regex(text, keep);
    else r.split_isolated(text, keep);
    return out;
}

SplitRegex compiled(std::string_view pattern) {
    auto r = SplitRegex::compile(pattern, "test");
    if (!r) throw std::runtime_error(r.error().message);
    return std::move(*r);
}

// Characters of every class these patterns tell apart.
const std::vector<std::string> kAlphabet = {
    "a", "b", "x", "s", "t", "r", "e", "v", "m", "l", "d", "S", "T", "R", "E", "V", "M", "L", "D", "A", "Q",
    "'", " ", " ", " ", "\t", "\r", "\n", "\v", "\f", "/", "-", ".", "!", "0", "7", "9",
    "\xc3\xa9",          // é Ll
    "\xc3\x89",          // É Lu
    "\xc7\x85",          // ǅ Lt
    "\xca\xb0",          // ʰ Lm
    "\xe4\xb8\xad",      // 中 Lo
    "\xe3\x84\xb1",      // ㄱ Lo
    "\xcc\x81",          // U+0301 Mn
    "\xe0\xa4\x83",      // U+0903 Mc
    "\xc5\xbf",          // ſ Ll, folds to s
    "\xe2\x84\xaa",      // U+212A Kelvin sign Lu, folds to k
    "\xc4\xb0",          // İ Lu
    "\xd9\xa3",          // ٣ Nd
    "\xe2\x85\xab",      // Ⅻ Nl
    "\xc2\xbd",          // ½ No
    "\xc2\xa0",          // NBSP Zs
    "\xe2\x80\xa8",      // U+2028 Zl
    "\xe3\x80\x80",      // U+3000 Zs
    "\xc2\x85",          // U+0085 NEL
    "\xf0\x9f\x98\x80",  // 😀 So
    "\xe2\x82\xac",      // € Sc
};

TEST(SplitKnown, EveryKnownPatternIsRecognised) {
    for (std::string_view p : patterns()) EXPECT_TRUE(compiled(p).known_pattern()) << p;
    EXPECT_FALSE(compiled(R"(\p{L}+|\s+)").known_pattern());
}

TEST(SplitKnown, RandomTextGivesOnigurumasPieces) {
    std::mt19937 rng(61);
    for (std::string_view pattern : patterns()) {
        const SplitRegex r = compiled(pattern);
        for (int round = 0; round < 4000; ++round) {
            // Runs of one character now and then, so long runs and their ends occur.
            std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1), length(0, 40), repeat(1, 6);
            std::string text;
            for (size_t n = length(rng); n > 0; --n) {
                const std::string& ch = kAlphabet[pick(rng)];
                for (size_t k = round % 3 == 0 ? repeat(rng) : 1; k > 0; --k) text += ch;
            }
            const auto want = pieces(r, text, true);
            const auto got = pieces(r, text, false);
            ASSERT_EQ(got, want) << "pattern " << pattern << ", text \"" << text << "\"";
        }
    }
}

// Matches that depend on a character far ahead: an upper-case run with a Lo letter early on ends
// at that letter, unless a lower-case letter follows the run (o200k); spaces before a letter or a
// newline far along; a contraction after a long word.
TEST(SplitKnown, LongRunsGiveOnigurumasPieces) {
    const std::string upper(5000, 'A'), spaces(5000, ' '), letters(5000, 'q');
    const std::vector<std::string> texts = {
        "AB\xe3\x84\xb1" + upper,          "AB\xe3\x84\xb1" + upper + "x",   "AB\xe3\x84\xb1" + upper + "1",
        " \xcc\x81" + upper + "'S",        letters + "'ll " + letters,        spaces + "x",
        spaces + "\n" + spaces + "x",      spaces + "\r\n",                   spaces,
        "!" + letters + "/" + spaces,      std::string(5000, '7') + "x",      std::string(3000, '/') + "\r\n\r/x",
    };
    for (std::string_view pattern : patterns()) {
        const SplitRegex r = compiled(pattern);
        for (const std::string& t : texts)
            ASSERT_EQ(pieces(r, t, false), pieces(r, t, true)) << "pattern " << pattern << ", text of " << t.size() << " bytes";
    }
}

// Text that is not valid UTF-8 goes to Oniguruma, which decides what it does with it.
TEST(SplitKnown, InvalidUtf8FallsBackToOniguruma) {
    for (std::string_view pattern : patterns()) {
        const SplitRegex r = compiled(pattern);
        const std::string text = "ab \xff\xfe cd";
        EXPECT_EQ(pieces(r, text, false), pieces(r, text, true));
    }
}

}  // namespace
}  // namespace stormo::text
