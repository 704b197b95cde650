// stormo serve's replies from generated ids with the real gpt-oss (Harmony) and Qwen3 (think
// tags) tokenizers: reasoning apart from the answer (reasoning_content), tool calls, stop sequences
// cutting the answer but never the reasoning, text completions without special tokens.
#include <gtest/gtest.h>

#include "serve/reply_assembler.hpp"
#include "tokenizer_reference_support.hpp"

namespace stormo::serve {
namespace {

struct Assembled {
    std::string streamed_content;
    std::string streamed_reasoning;
    bool stopped = false;
    size_t ids_taken = 0;
};

// Pushes the ids of `generated` until a stop sequence ends the answer, as the worker does.
Assembled assemble(ReplyAssembler& a, const text::Tokenizer& t, const std::string& generated) {
    Assembled out;
    auto take = [&](const std::vector<text::ReplyPiece>& pieces) {
        for (const auto& p : pieces)
            (p.kind == text::ReplyPiece::Kind::reasoning ? out.streamed_reasoning : out.streamed_content) += p.text;
    };
    for (int32_t id : t.encode(generated)) {
        auto pieces = a.push(id);
        EXPECT_TRUE(pieces.has_value());
        if (pieces) take(*pieces);
        ++out.ids_taken;
        if (a.stopped()) break;
    }
    take(a.finish());
    out.stopped = a.stopped();
    return out;
}

const text::Tokenizer& gpt_oss() { return stormo::test::reference_tokenizer("gpt-oss"); }
const text::Tokenizer& qwen3() { return stormo::test::reference_tokenizer("qwen3"); }

constexpr const char* kHarmony =
    "<|channel|>analysis<|message|>Add 123 and 456: the sum is 579.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>123 + 456 = 579.<|return|>";

TEST(ServeReply, HarmonyReasoningIsReasoningContent) {
    ReplyAssembler a(gpt_oss(), text::ReplyFormat::harmony, Endpoint::chat, {});
    const Assembled r = assemble(a, gpt_oss(), kHarmony);
    EXPECT_EQ(a.reasoning(), "Add 123 and 456: the sum is 579.");
    EXPECT_EQ(a.content(), "123 + 456 = 579.");
    EXPECT_EQ(r.streamed_reasoning, a.reasoning());
    EXPECT_EQ(r.streamed_content, a.content());
    EXPECT_FALSE(r.stopped);
}

TEST(ServeReply, StopSequencesCutTheAnswerNotTheReasoning) {
    // "579" appears in the reasoning first: it must not stop there.
    ReplyAssembler a(gpt_oss(), text::ReplyFormat::harmony, Endpoint::chat, {"579"});
    const Assembled r = assemble(a, gpt_oss(), kHarmony);
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(a.reasoning(), "Add 123 and 456: the sum is 579.");
    EXPECT_EQ(a.content(), "123 + 456 = ");
    EXPECT_EQ(r.streamed_content, "123 + 456 = ");
    EXPECT_LT(r.ids_taken, gpt_oss().encode(kHarmony).size());  // generation ends at the match
}

TEST(ServeReply, ThinkTagsAndToolCalls) {
    ReplyAssembler a(qwen3(), text::ReplyFormat::think_tags, Endpoint::chat, {});
    assemble(a, qwen3(),
             "<think>\nI need the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
             "{\"city\": \"Rome\"}}\n</tool_call><|im_end|>");
    EXPECT_EQ(a.reasoning(), "I need the weather.\n");
    ASSERT_EQ(a.tool_calls().size(), 1u);
    EXPECT_EQ(a.tool_calls()[0].name, "get_weather");
    EXPECT_EQ(a.tool_calls()[0].arguments.find("city")->as_string(), "Rome");
}

TEST(ServeReply, TextCompletionsDropSpecialTokensAndKeepHeldBackText) {
    ReplyAssembler a(gpt_oss(), text::ReplyFormat::harmony, Endpoint::completion, {"zz"});
    const Assembled r = assemble(a, gpt_oss(), "Paris is nice.<|return|> z");
    EXPECT_FALSE(r.stopped);
    EXPECT_EQ(a.content(), "Paris is nice. z");  // the held-back " z" never became "zz": sent at the end
    EXPECT_EQ(r.streamed_content, a.content());
    EXPECT_TRUE(a.reasoning().empty());
    EXPECT_TRUE(a.tool_calls().empty());
}

}  // namespace
}  // namespace stormo::serve
