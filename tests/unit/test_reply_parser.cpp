// Generated ids read back as a reply: the real gpt-oss (Harmony) and Qwen3 (think tags) tokenizers
// encode what the models write, and the parser splits it into reasoning, answer and tool calls,
// streaming the same text it finally reports.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "reply/reply_parser.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer_reference_support.hpp"

namespace stormo::text {
namespace {

const Tokenizer& tokenizer(const std::string& name) { return stormo::test::reference_tokenizer(name); }

struct Parsed {
    Reply reply;
    std::string streamed_reasoning;
    std::string streamed_content;
};

Parsed parse(const Tokenizer& t, const std::string& generated) {
    ReplyParser parser(t, detect_reply_format(t));
    Parsed out;
    auto take = [&](const std::vector<ReplyPiece>& pieces) {
        for (const auto& p : pieces)
            (p.kind == ReplyPiece::Kind::reasoning ? out.streamed_reasoning : out.streamed_content) += p.text;
    };
    for (int32_t id : t.encode(generated)) {
        auto pieces = parser.push(id);
        EXPECT_TRUE(pieces.has_value()) << (pieces ? "" : pieces.error().message);
        if (pieces) take(*pieces);
    }
    take(parser.finish());
    out.reply = parser.reply();
    return out;
}

TEST(ReplyParser, FormatsAreDetectedFromTheVocabulary) {
    EXPECT_EQ(detect_reply_format(tokenizer("gpt-oss")), ReplyFormat::harmony);
    EXPECT_EQ(detect_reply_format(tokenizer("qwen3")), ReplyFormat::think_tags);
    auto demo = Tokenizer::load(std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo");
    ASSERT_TRUE(demo.has_value()) << demo.error().message;
    EXPECT_EQ(detect_reply_format(*demo), ReplyFormat::plain);
}

TEST(ReplyParser, HarmonySplitsAnalysisFromTheFinalAnswer) {
    // What gpt-oss writes after the generation prompt "<|start|>assistant".
    const auto p = parse(tokenizer("gpt-oss"),
                         "<|channel|>analysis<|message|>The user wants the capital. 東京 is Japan's.<|end|>"
                         "<|start|>assistant<|channel|>final<|message|>Paris is the capital of France.<|return|>");
    EXPECT_EQ(p.reply.reasoning, "The user wants the capital. 東京 is Japan's.");
    EXPECT_EQ(p.reply.content, "Paris is the capital of France.");
    EXPECT_TRUE(p.reply.tool_calls.empty());
    EXPECT_EQ(p.streamed_reasoning, p.reply.reasoning);
    EXPECT_EQ(p.streamed_content, p.reply.content);
    const Value message = p.reply.as_message(ReplyFormat::harmony);
    EXPECT_EQ(message.find("thinking")->as_string(), p.reply.reasoning);
    EXPECT_EQ(message.find("content")->as_string(), p.reply.content);
}

TEST(ReplyParser, HarmonyToolCallsCarryTheirRecipientAndJsonArguments) {
    const auto p = parse(tokenizer("gpt-oss"),
                         "<|channel|>analysis<|message|>Need the weather.<|end|>"
                         "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>"
                         "{\"city\":\"Rome\",\"days\":2}<|call|>");
    ASSERT_EQ(p.reply.tool_calls.size(), 1u);
    EXPECT_EQ(p.reply.tool_calls[0].name, "get_weather");
    ASSERT_TRUE(p.reply.tool_calls[0].arguments.is_object());
    EXPECT_EQ(p.reply.tool_calls[0].arguments.find("city")->as_string(), "Rome");
    EXPECT_EQ(p.reply.content, "");
    EXPECT_EQ(p.streamed_content, "") << "a tool call's arguments are not the answer";
    const Value message = p.reply.as_message(ReplyFormat::harmony);
    EXPECT_EQ(message.find("content"), nullptr) << "the template refuses content and thinking beside a tool call";
    EXPECT_EQ(message.find("tool_calls")->as_list()[0].find("function")->find("name")->as_string(), "get_weather");
}

TEST(ReplyParser, ThinkTagsSplitReasoningAndDropTheTemplatesNewlines) {
    const auto p = parse(tokenizer("qwen3"), "<think>\nLet me add: 2+2=4.\n</think>\n\nThe answer is 4.<|im_end|>");
    EXPECT_EQ(p.reply.reasoning, "Let me add: 2+2=4.");
    EXPECT_EQ(p.reply.content, "The answer is 4.");
    EXPECT_EQ(p.streamed_content, "The answer is 4.");
    EXPECT_EQ(p.reply.as_message(ReplyFormat::think_tags).find("reasoning_content")->as_string(), "Let me add: 2+2=4.");
}

TEST(ReplyParser, ThinkTagsReadToolCallsAsJson) {
    const auto p = parse(tokenizer("qwen3"),
                         "<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n"
                         "</tool_call><|im_end|>");
    ASSERT_EQ(p.reply.tool_calls.size(), 1u);
    EXPECT_EQ(p.reply.tool_calls[0].name, "get_weather");
    EXPECT_EQ(p.reply.tool_calls[0].arguments.find("city")->as_string(), "Rome");
    EXPECT_EQ(p.reply.content, "");
    EXPECT_EQ(p.reply.reasoning, "");
}

TEST(ReplyParser, AToolCallThatIsNotJsonStaysVisible) {
    const auto p = parse(tokenizer("qwen3"), "<tool_call>not json</tool_call>");
    EXPECT_TRUE(p.reply.tool_calls.empty());
    EXPECT_EQ(p.reply.content, "not json");
}

TEST(ReplyParser, AnAnswerCutShortKeepsWhatWasComplete) {
    // The token limit can end a reply inside the analysis: it is reasoning, and there is no answer.
    const auto p = parse(tokenizer("gpt-oss"), "<|channel|>analysis<|message|>Thinking about");
    EXPECT_EQ(p.reply.reasoning, "Thinking about");
    EXPECT_EQ(p.reply.content, "");
}

}  // namespace
}  // namespace stormo::text
