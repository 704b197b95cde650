// The tokenizer against the reference library's own output: every encode case (special tokens
// matched, and --plain) and every decode case (with and without special tokens) of the GPT-OSS,
// Qwen3 and DeepSeek-V3 tokenizers, and the demo models' character-level tokenizers against their eval sets.
// Each big tokenizer loads once for its suite; a failure lists every failing case id.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "tokenizer/tokenizer.hpp"
#include "tokenizer_reference_support.hpp"

namespace {

using stormo::test::ids_to_string;
using stormo::test::json_ids;
using stormo::test::json_text;
using stormo::text::Tokenizer;

class TokenizerReference : public ::testing::TestWithParam<std::string> {
protected:
    static const Tokenizer& tokenizer(const std::string& name) { return stormo::test::reference_tokenizer(name); }
    static std::string reference(const std::string& name, const std::string& file) {
        return stormo::test::kTokenizerData + "/" + name + "/reference/" + file;
    }
};

TEST_P(TokenizerReference, EncodeMatchesEveryCase) {
    const Tokenizer& tok = tokenizer(GetParam());
    simdjson::dom::parser parser;
    const auto cases = parser.load(reference(GetParam(), "encode.json")).value().get_array().value();
    size_t checked = 0;
    for (simdjson::dom::element c : cases) {
        const std::string id = json_text(c["id"]);
        const std::string text = json_text(c["text"]);
        const auto ids = tok.encode(text, true);
        const auto plain = tok.encode(text, false);
        EXPECT_EQ(ids_to_string(ids), ids_to_string(json_ids(c["ids"]))) << GetParam() << " case " << id << " (specials matched)";
        EXPECT_EQ(ids_to_string(plain), ids_to_string(json_ids(c["ids_plain"]))) << GetParam() << " case " << id << " (plain)";
        ++checked;
    }
    EXPECT_GT(checked, 200u);
}

TEST_P(TokenizerReference, DecodeMatchesEveryCase) {
    const Tokenizer& tok = tokenizer(GetParam());
    simdjson::dom::parser parser;
    const auto cases = parser.load(reference(GetParam(), "decode.json")).value().get_array().value();
    size_t checked = 0;
    for (simdjson::dom::element c : cases) {
        const std::string id = json_text(c["id"]);
        const auto ids = json_ids(c["ids"]);
        const auto text = tok.decode(ids, false);
        const auto skipped = tok.decode(ids, true);
        ASSERT_TRUE(text && skipped) << GetParam() << " case " << id;
        EXPECT_EQ(*text, json_text(c["text"])) << GetParam() << " case " << id;
        EXPECT_EQ(*skipped, json_text(c["text_skip_special"])) << GetParam() << " case " << id << " (skip special)";
        ++checked;
    }
    EXPECT_GT(checked, 200u);
}

// Decoding piece by piece through a StreamDecoder gives the whole decode's text.
TEST_P(TokenizerReference, StreamDecodeEqualsWholeDecode) {
    const Tokenizer& tok = tokenizer(GetParam());
    simdjson::dom::parser parser;
    const auto cases = parser.load(reference(GetParam(), "decode.json")).value().get_array().value();
    for (simdjson::dom::element c : cases) {
        const auto ids = json_ids(c["ids"]);
        stormo::text::StreamDecoder stream(tok);
        std::string text;
        for (const int32_t id : ids) {
            auto piece = stream.push(id);
            ASSERT_TRUE(piece) << piece.error().message;
            text += *piece;
        }
        text += stream.finish();
        EXPECT_EQ(text, json_text(c["text"])) << GetParam() << " case " << json_text(c["id"]);
    }
}

// The test name of a reference set.
std::string reference_set_name(const ::testing::TestParamInfo<std::string>& param_info) {
    static const std::map<std::string, std::string> names = {{"gpt-oss", "GptOss"}, {"qwen3", "Qwen3"}, {"deepseek-v3", "DeepSeekV3"}};
    return names.at(param_info.param);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, TokenizerReference, ::testing::Values("gpt-oss", "qwen3", "deepseek-v3"), reference_set_name);

class TokenizerDemoModel : public ::testing::TestWithParam<std::string> {};

// The demo models' tokenizers: every eval prompt encodes to its prompt ids, every answer's ids
// decode to its answer text.
TEST_P(TokenizerDemoModel, EvalPromptsAndAnswers) {
    const std::string dir = std::string(STORMO_SOURCE_DIR) + "/models/" + GetParam();
    auto tok = Tokenizer::load(dir);
    ASSERT_TRUE(tok) << tok.error().message;
    simdjson::dom::parser parser;
    const auto problems = parser.load(dir + "/reference/eval.json").value()["problems"].get_array().value();
    size_t checked = 0;
    for (simdjson::dom::element p : problems) {
        const std::string index = std::to_string(p["index"].get_int64().value());
        EXPECT_EQ(ids_to_string(tok->encode(json_text(p["prompt"]))), ids_to_string(json_ids(p["prompt_ids"]))) << "problem " << index;
        const auto answer = tok->decode(json_ids(p["expected_ids"]), true);
        ASSERT_TRUE(answer) << answer.error().message;
        EXPECT_EQ(*answer, json_text(p["expected_answer"])) << "problem " << index;
        const auto output = tok->decode(json_ids(p["output_ids"]), true);
        ASSERT_TRUE(output) << output.error().message;
        EXPECT_EQ(*output, json_text(p["output_text"])) << "problem " << index;
        ++checked;
    }
    EXPECT_GT(checked, 0u);
    // The README's example, and a character outside the vocabulary becoming <|unk|> (47).
    EXPECT_EQ(ids_to_string(tok->encode("123+456=")), "1,2,3,40,4,5,6,45");
    EXPECT_EQ(ids_to_string(tok->encode("a#b")), "10,47,11");
    EXPECT_EQ(ids_to_string(tok->encode("46<|end|>")), "4,6,48");
}

INSTANTIATE_TEST_SUITE_P(Demos, TokenizerDemoModel, ::testing::Values("gpt-oss-demo", "qwen3-moe-demo", "glm-moe-dsa-demo"),
                         [](const auto& param_info) {
                             std::string name;
                             for (const char c : param_info.param) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             return name;
                         });

}  // namespace
