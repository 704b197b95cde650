// The tokenizer's building blocks on their own: lossy UTF-8 rendering under the maximal-subpart
// rule (what Rust's from_utf8_lossy does), the incomplete tail a stream holds back, GPT-2's
// byte-level alphabet, and NFC normalizing line by line.
#include <gtest/gtest.h>

#include "tokenizer/byte_level.hpp"
#include "tokenizer/normalizer.hpp"
#include "util/utf8.hpp"

namespace {

using namespace stormo::text;

const std::string kFffd = "\xEF\xBF\xBD";

TEST(TokenizerUtf8, LossyReplacesEachMaximalInvalidSubpartOnce) {
    EXPECT_EQ(utf8::lossy("a\xF0\x9F\xA4"), "a" + kFffd);                   // a truncated 4-byte sequence: one U+FFFD
    EXPECT_EQ(utf8::lossy("\xE0\x80"), kFffd + kFffd);                       // E0 needs A0..BF next: two subparts
    EXPECT_EQ(utf8::lossy("\xED\xA0\x80"), kFffd + kFffd + kFffd);            // a surrogate is three
    EXPECT_EQ(utf8::lossy("\xF0\x9F\xA4x\x96"), kFffd + "x" + kFffd);
    EXPECT_EQ(utf8::lossy("\xC3\xA9\xFF"), "\xC3\xA9" + kFffd);
    EXPECT_EQ(utf8::lossy("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // above U+10FFFF
}

TEST(TokenizerUtf8, IncompleteTailIsOnlyAValidPrefix) {
    EXPECT_EQ(utf8::incomplete_tail("ab\xF0\x9F\xA4"), 3u);
    EXPECT_EQ(utf8::incomplete_tail("ab\xE4"), 1u);
    EXPECT_EQ(utf8::incomplete_tail("ab\xF0\x9F\xA4\x96"), 0u);
    EXPECT_EQ(utf8::incomplete_tail("ab\x96"), 0u);      // a stray continuation byte can never complete
    EXPECT_EQ(utf8::incomplete_tail("ab\xE0\x80"), 0u);  // already invalid
    EXPECT_EQ(utf8::incomplete_tail(""), 0u);
}

TEST(TokenizerByteLevel, AlphabetIsGpt2sAndRoundTrips) {
    const ByteLevelAlphabet& a = ByteLevelAlphabet::get();
    EXPECT_EQ(a.code_point(' '), U'\u0120');   // Ġ
    EXPECT_EQ(a.code_point('\n'), U'\u010A');  // Ċ
    EXPECT_EQ(a.code_point('A'), U'A');
    EXPECT_EQ(a.code_point(0xAD), U'\u0143');  // the soft hyphen is the last to move
    std::string all;
    for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
    std::string spelled;
    a.encode(all, spelled);
    EXPECT_EQ(a.decode(spelled), all);
    EXPECT_FALSE(a.decode("\xE4\xBD\xA0"));  // 你 is not in the alphabet
}

TEST(TokenizerNormalizer, NfcComposesOnEveryLine) {
    const Normalizer nfc{true};
    EXPECT_EQ(nfc.apply("e\xCC\x81\nA\xCC\x8A x\n"), "\xC3\xA9\n\xC3\x85 x\n");  // é, Å
    EXPECT_EQ(nfc.apply("plain ascii\n"), "plain ascii\n");
    EXPECT_EQ(nfc.apply("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // Hangul jamo compose to 가
    EXPECT_EQ(Normalizer{}.apply("e\xCC\x81"), "e\xCC\x81");
}

}  // namespace
