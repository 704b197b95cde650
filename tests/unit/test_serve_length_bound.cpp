// A prompt is refused by its length alone, before it is encoded, only when its length proves it
// cannot fit: Tokenizer::max_bytes_per_token is the most text one token stands for (none when the
// tokenizer drops text or fuses unknown characters), and prepare_request refuses a prompt longer
// than (context - 1) tokens of that many bytes, yet takes one of exactly that many.
#include <gtest/gtest.h>

#include <fstream>

#include "oracle_support.hpp"
#include "safetensors_writer.hpp"
#include "serve/prepare_request.hpp"

namespace stormo::serve {
namespace {

// A small BPE tokenizer.json: vocabulary a, b, c, ab, abcabc and one added token "<|end|>".
std::string small_tokenizer(const std::string& normalizer, const std::string& pre_tokenizer, const std::string& unk) {
    return R"({"version": "1.0", "added_tokens": [{"id": 5, "content": "<|end|>", "special": true, "normalized": false,
    "lstrip": false, "rstrip": false, "single_word": false}],
  "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer + R"(, "post_processor": null, "decoder": null,
  "model": {"type": "BPE", "dropout": null, "byte_fallback": false, "ignore_merges": false, )" + unk + R"(,
            "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abcabc": 4}, "merges": []}})";
}

class MaxBytesPerToken : public ::testing::Test {
protected:
    std::optional<size_t> bound(const std::string& content) {
        const std::string path = dir_.file("tokenizer.json");
        std::ofstream(path, std::ios::binary) << content;
        auto t = text::Tokenizer::load(path);
        EXPECT_TRUE(t) << t.error().message;
        return t ? t->max_bytes_per_token() : std::nullopt;
    }
    test::TempDir dir_;
};

const char* kUnk = R"("unk_token": "a", "fuse_unk": false)";
const char* kFusedUnk = R"("unk_token": "a", "fuse_unk": true)";
const char* kNoUnk = R"("unk_token": null)";
const char* kByteLevel = R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})";

TEST_F(MaxBytesPerToken, IsTheLongestTokenWhenEveryCharacterBecomesOne) {
    // "<|end|>" (7 bytes) is longer than any vocabulary token (6); an unknown character is one token.
    EXPECT_EQ(bound(small_tokenizer("null", R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated"})", kUnk)),
              7u);
}

TEST_F(MaxBytesPerToken, NfcCanShortenTextToAThird) {
    EXPECT_EQ(bound(small_tokenizer(R"({"type": "NFC"})", R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated"})", kUnk)),
              21u);
}

TEST_F(MaxBytesPerToken, NoneWhenTextCanVanishOrFuse) {
    const char* split = R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated"})";
    // Without an unknown token characters outside the vocabulary are dropped: "xyz" is no token.
    EXPECT_EQ(bound(small_tokenizer("null", split, kNoUnk)), std::nullopt);
    // Byte level without all 256 byte characters in the vocabulary drops bytes too.
    EXPECT_EQ(bound(small_tokenizer("null", kByteLevel, kNoUnk)), std::nullopt);
    // A fused run of unknown characters is one token however long.
    EXPECT_EQ(bound(small_tokenizer("null", split, kFusedUnk)), std::nullopt);
}

TEST(ServeLengthBound, TheDemoTokenizerHasOne) {
    auto tokenizer = text::Tokenizer::load(stormo::testing::demo_dir());
    ASSERT_TRUE(tokenizer);
    // Byte level with an unknown token: its longest added token, "<|reserved_13|>".
    EXPECT_EQ(tokenizer->max_bytes_per_token(), std::string("<|reserved_13|>").size());
}

TEST(ServeLengthBound, APromptIsRefusedByItsLengthOnlyWhenItCannotFit) {
    auto tokenizer = text::Tokenizer::load(stormo::testing::demo_dir());
    auto chat_template = text::ChatTemplate::load(stormo::testing::demo_dir());
    ASSERT_TRUE(tokenizer && chat_template);
    const size_t per_token = tokenizer->max_bytes_per_token().value();
    const PromptText text{&*tokenizer, &*chat_template, per_token};
    const size_t context = 16;
    // context - 1 tokens of the longest spelling: exactly the bound, and it fits.
    std::string longest_tokens;
    for (size_t i = 0; i + 1 < context; ++i) longest_tokens += "<|reserved_13|>";
    ASSERT_EQ(longest_tokens.size(), (context - 1) * per_token);
    auto fits = parse_completion_request(R"({"prompt": ")" + longest_tokens + R"("})");
    ASSERT_TRUE(fits);
    auto prepared = prepare_request(*fits, text, context);
    ASSERT_TRUE(prepared) << prepared.error().message;
    EXPECT_EQ(prepared->prompt.size(), context - 1);

    // One byte more proves at least `context` tokens: refused by its length, saying so.
    auto longer = parse_completion_request(R"({"prompt": ")" + longest_tokens + R"(1"})");
    ASSERT_TRUE(longer);
    auto refused = prepare_request(*longer, text, context);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code.value_or(""), "context_length_exceeded");
    EXPECT_EQ(refused.error().param.value_or(""), "prompt");
    EXPECT_NE(refused.error().message.find("bytes, at least 16 tokens"), std::string::npos) << refused.error().message;

    // A chat is bounded by its rendered text (the demo's template renders a user's content as it is).
    auto chat = parse_chat_request(R"({"messages": [{"role": "user", "content": ")" + longest_tokens + R"(1"}]})");
    ASSERT_TRUE(chat);
    auto refused_chat = prepare_request(*chat, text, context);
    ASSERT_FALSE(refused_chat);
    EXPECT_EQ(refused_chat.error().param.value_or(""), "messages");
    EXPECT_NE(refused_chat.error().message.find("bytes, at least"), std::string::npos) << refused_chat.error().message;
}

}  // namespace
}  // namespace stormo::serve
