// The tokenizer's refusals (missing file, malformed JSON, components it lacks, merges naming
// unknown tokens, ids out of range) and the stream decoder holding back split characters.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "safetensors_writer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer_reference_support.hpp"

namespace {

using stormo::ErrorKind;
using stormo::text::StreamDecoder;
using stormo::text::Tokenizer;

// A small byte-level BPE tokenizer.json; `model_extra`, `normalizer`, `pre_tokenizer` and
// `decoder` replace the defaults so each test breaks one thing.
std::string tokenizer_json(const std::string& normalizer = "null",
                           const std::string& pre_tokenizer = R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})",
                           const std::string& decoder = R"({"type": "ByteLevel"})",
                           const std::string& merges = R"(["a b", ["ab", "c"]])", const std::string& model_extra = "") {
    return R"({"version": "1.0", "truncation": null, "padding": null,
  "added_tokens": [{"id": 6, "content": "<|end|>", "special": true, "normalized": false,
                    "lstrip": false, "rstrip": false, "single_word": false}],
  "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer + R"(, "post_processor": null,
  "decoder": )" + decoder + R"(,
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "byte_fallback": false, "ignore_merges": false)" +
           model_extra + R"(,
            "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "Ġ": 5}, "merges": )" + merges + "}}";
}

class TokenizerErrors : public ::testing::Test {
protected:
    stormo::Expected<Tokenizer> load(const std::string& content) {
        const std::string path = dir_.file("tokenizer.json");
        std::ofstream(path, std::ios::binary) << content;
        return Tokenizer::load(path);
    }
    // Loading must fail with `kind`, naming the file and containing `needle`.
    void expect_refused(const std::string& content, ErrorKind kind, const std::string& needle) {
        auto t = load(content);
        ASSERT_FALSE(t) << "expected a refusal mentioning " << needle;
        EXPECT_EQ(t.error().kind, kind) << t.error().message;
        EXPECT_NE(t.error().message.find("tokenizer.json"), std::string::npos) << t.error().message;
        EXPECT_NE(t.error().message.find(needle), std::string::npos) << t.error().message;
    }
    stormo::test::TempDir dir_;
};

TEST_F(TokenizerErrors, TheSmallTokenizerWorks) {
    auto t = load(tokenizer_json());
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_EQ(t->encode("abc ab<|end|>"), (std::vector<int32_t>{4, 5, 3, 6}));
    EXPECT_EQ(t->encode("abc<|end|>", false), (std::vector<int32_t>{4}));  // '<', '|' have no token and no unk: dropped
    EXPECT_EQ(t->size(), 7u);
    EXPECT_EQ(t->token_id("<|end|>"), 6);
    EXPECT_TRUE(t->is_special(6));
    EXPECT_EQ(*t->decode(std::vector<int32_t>{4, 5, 3, 6}), "abc ab<|end|>");
    EXPECT_EQ(*t->decode(std::vector<int32_t>{4, 5, 3, 6}, true), "abc ab");
}

TEST_F(TokenizerErrors, MissingFileIsNamed) {
    auto t = Tokenizer::load(dir_.file("nowhere/tokenizer.json"));
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().kind, ErrorKind::missing);
    EXPECT_NE(t.error().message.find("nowhere/tokenizer.json"), std::string::npos) << t.error().message;
    auto in_dir = Tokenizer::load(dir_.path());  // a directory without tokenizer.json
    ASSERT_FALSE(in_dir);
    EXPECT_NE(in_dir.error().message.find("tokenizer.json"), std::string::npos) << in_dir.error().message;
}

TEST_F(TokenizerErrors, MalformedJsonIsRefused) {
    expect_refused(R"({"model": {"type": "BPE", )", ErrorKind::format, "malformed JSON");
    expect_refused("[1, 2]", ErrorKind::format, "expected an object");
}

TEST_F(TokenizerErrors, UnsupportedComponentsAreNamed) {
    expect_refused(tokenizer_json(R"({"type": "Lowercase"})"), ErrorKind::unsupported, "normalizer 'Lowercase'");
    expect_refused(tokenizer_json("null", R"({"type": "Whitespace"})"), ErrorKind::unsupported, "pre_tokenizer.type");
    expect_refused(tokenizer_json("null", R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Removed", "invert": false})"),
                   ErrorKind::unsupported, "Removed");
    expect_refused(tokenizer_json("null", R"({"type": "ByteLevel"})", R"({"type": "WordPiece"})"), ErrorKind::unsupported, "decoder 'WordPiece'");
}

TEST_F(TokenizerErrors, ByteFallbackAndOtherModelsAreRefused) {
    std::string fallback = tokenizer_json();
    fallback.replace(fallback.find(R"("byte_fallback": false)"), 22, R"("byte_fallback": true)");
    expect_refused(fallback, ErrorKind::unsupported, "model.byte_fallback");
    std::string wordpiece = tokenizer_json();
    wordpiece.replace(wordpiece.find(R"("type": "BPE")"), 13, R"("type": "WordPiece")");
    expect_refused(wordpiece, ErrorKind::unsupported, "model 'WordPiece'");
}

TEST_F(TokenizerErrors, MergeOfUnknownTokenIsRefused) {
    expect_refused(tokenizer_json("null", R"({"type": "ByteLevel"})", R"({"type": "ByteLevel"})", R"(["a b", "b x"])"), ErrorKind::format,
                   "model.merges[1]: token 'x'");
    expect_refused(tokenizer_json("null", R"({"type": "ByteLevel"})", R"({"type": "ByteLevel"})", R"(["a b c"])"), ErrorKind::format,
                   "model.merges[0]");
}

TEST_F(TokenizerErrors, BadSplitRegexIsRefused) {
    expect_refused(tokenizer_json("null", R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated", "invert": false})"),
                   ErrorKind::format, "pre_tokenizer.pattern.Regex");
}

TEST_F(TokenizerErrors, AddedTokenFlagsItLacksAreRefused) {
    for (const std::string flag : {"lstrip", "rstrip", "single_word"}) {
        std::string content = tokenizer_json();
        const std::string from = "\"" + flag + "\": false";
        content.replace(content.find(from), from.size(), "\"" + flag + "\": true");
        expect_refused(content, ErrorKind::unsupported, "added_tokens[0]." + flag);
    }
}

TEST_F(TokenizerErrors, NotARegularFileOrTooLargeIsRefused) {
    std::filesystem::create_directories(dir_.file("nested/tokenizer.json"));
    auto dir = Tokenizer::load(dir_.file("nested"));
    ASSERT_FALSE(dir);
    EXPECT_NE(dir.error().message.find("not a regular file"), std::string::npos) << dir.error().message;
    const std::string huge = dir_.file("huge.json");
    std::ofstream(huge) << "{}";
    std::filesystem::resize_file(huge, (256ull << 20) + 1);  // sparse: nothing is written
    auto big = Tokenizer::load(huge);
    ASSERT_FALSE(big);
    EXPECT_NE(big.error().message.find("256 MiB"), std::string::npos) << big.error().message;
}

// Components accepted beyond the references' own: a literal Split, NFC inside a Sequence, a
// TemplateProcessing post-processor (never applied), ByteLevel's prefix space, unk fusing.
TEST_F(TokenizerErrors, OtherSupportedComponentsBehave) {
    auto literal = load(tokenizer_json(
        R"({"type": "Sequence", "normalizers": [{"type": "NFC"}]})",
        R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"String": "b"}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})"));
    ASSERT_TRUE(literal) << literal.error().message;
    EXPECT_EQ(literal->encode("abc"), (std::vector<int32_t>{0, 1, 2}));  // "a" "b" "c": the split keeps ab from merging

    auto prefixed = load(tokenizer_json("null", R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": true})"));
    ASSERT_TRUE(prefixed) << prefixed.error().message;
    EXPECT_EQ(prefixed->encode("ab"), (std::vector<int32_t>{5, 3}));  // " ab": Ġ, ab

    std::string templ = tokenizer_json();
    templ.replace(templ.find(R"("post_processor": null)"), 22,
                  R"("post_processor": {"type": "TemplateProcessing", "single": [], "pair": [], "special_tokens": {}})");
    auto with_template = load(templ);
    ASSERT_TRUE(with_template) << with_template.error().message;
    EXPECT_EQ(with_template->encode("abc"), (std::vector<int32_t>{4}));

    std::string unk = tokenizer_json("null", R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": false})");
    unk.replace(unk.find(R"("unk_token": null)"), 17, R"("unk_token": "c", "fuse_unk": true)");
    auto fused = load(unk);
    ASSERT_TRUE(fused) << fused.error().message;
    EXPECT_EQ(fused->encode("a??b"), (std::vector<int32_t>{0, 2, 1}));  // the two unknown '?' fuse into one unk
}

TEST_F(TokenizerErrors, OutOfRangeIdIsNamed) {
    auto t = load(tokenizer_json());
    ASSERT_TRUE(t) << t.error().message;
    const std::vector<int32_t> ids{0, 1234567};
    auto text = t->decode(ids);
    ASSERT_FALSE(text);
    EXPECT_EQ(text.error().kind, ErrorKind::invalid_argument);
    EXPECT_NE(text.error().message.find("1234567"), std::string::npos) << text.error().message;
    StreamDecoder stream(*t);
    EXPECT_FALSE(stream.push(-1));
    // Generated ids past the tokenizer's are the padding rows of a model's vocabulary (a random
    // or badly trained model can emit them): no text, as the reference decoder skips them.
    auto padding = stream.push(static_cast<int32_t>(t->size()) + 5);
    ASSERT_TRUE(padding.has_value()) << padding.error().message;
    EXPECT_EQ(*padding, "");
}

// GPT-OSS spells 🤖 (F0 9F A4 96) in two tokens; the first alone is an incomplete sequence that a
// stream must hold back, then give whole.
TEST(TokenizerStream, HoldsBackASplitCharacter) {
    auto t = Tokenizer::load(stormo::test::kTokenizerData + "/gpt-oss");
    ASSERT_TRUE(t) << t.error().message;
    const auto ids = t->encode("Hi 🤖!");
    StreamDecoder stream(*t);
    std::vector<std::string> pieces;
    for (const int32_t id : ids) pieces.push_back(*stream.push(id));
    pieces.push_back(stream.finish());
    std::string whole;
    for (const auto& p : pieces) {
        whole += p;
        EXPECT_EQ(p.find("\xEF\xBF\xBD"), std::string::npos) << "a piece holds a replacement character";
    }
    EXPECT_EQ(whole, "Hi 🤖!");
    ASSERT_GT(ids.size(), 3u);
    // Pushing only the first byte-level token of the emoji yields nothing until the rest comes.
    const auto emoji = t->encode("🤖");
    ASSERT_EQ(emoji.size(), 2u);
    StreamDecoder split(*t);
    EXPECT_EQ(*split.push(emoji[0]), "");
    EXPECT_EQ(*split.push(emoji[1]), "🤖");
    // An incomplete sequence left at the end renders as the reference would: one U+FFFD.
    StreamDecoder cut(*t);
    EXPECT_EQ(*cut.push(emoji[0]), "");
    EXPECT_EQ(cut.finish(), "\xEF\xBF\xBD");
}

}  // namespace

// Two tokens on one id were accepted: one of them could never be decoded, and an end-of-text id
// whose token another one took failed only when an answer ended on it.
TEST_F(TokenizerErrors, TwoTokensOnOneIdAreRefused) {
    std::string vocab_twice = tokenizer_json();
    vocab_twice.replace(vocab_twice.find("\"b\": 1"), 6, "\"b\": 0");
    expect_refused(vocab_twice, ErrorKind::format, "vocab[\"b\"]: id 0 is already the id of \"a\"");
    std::string added_on_vocab = tokenizer_json();
    added_on_vocab.replace(added_on_vocab.find("\"id\": 6"), 7, "\"id\": 3");
    expect_refused(added_on_vocab, ErrorKind::format, "added_tokens[0]: \"<|end|>\" takes id 3, already the id of \"ab\"");
    // An added token repeating the vocabulary's own token on its id is fine (tokenizers often do).
    std::string repeated = tokenizer_json();
    repeated.replace(repeated.find("\"content\": \"<|end|>\""), 20, "\"content\": \"Ġ\"");
    repeated.replace(repeated.find("\"id\": 6"), 7, "\"id\": 5");
    EXPECT_TRUE(load(repeated)) << load(repeated).error().message;
}

TEST_F(TokenizerErrors, StopIdsMustHaveATokenEach) {
    std::string gap = tokenizer_json();
    gap.replace(gap.find("\"id\": 6"), 7, "\"id\": 9");  // ids 6-8 now have no token
    auto t = load(gap);
    ASSERT_TRUE(t) << t.error().message;
    EXPECT_TRUE(t->check_stop_ids(std::vector<int32_t>{9, 4}));
    auto missing = t->check_stop_ids(std::vector<int32_t>{9, 7});
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("tokenizer.json: the model's end-of-text id 7 (eos_token_id) has no token"),
              std::string::npos)
        << missing.error().message;
}
