// stormo serve renders and checks a request on the connection's thread, before it is queued: the
// demo's template and tokenizer give the README's ids, and a prompt or max_tokens past the
// context is refused with code context_length_exceeded.
#include <gtest/gtest.h>

#include "oracle_support.hpp"
#include "serve/prepare_request.hpp"

namespace stormo::serve {
namespace {

struct DemoText {
    text::Tokenizer tokenizer;
    text::ChatTemplate chat_template;
    PromptText view() const { return {&tokenizer, &chat_template, std::nullopt}; }
};

DemoText demo_text() {
    auto tokenizer = text::Tokenizer::load(stormo::testing::demo_dir());
    auto chat_template = text::ChatTemplate::load(stormo::testing::demo_dir());
    EXPECT_TRUE(tokenizer && chat_template);
    return DemoText{std::move(*tokenizer), std::move(*chat_template)};
}

TEST(ServePrepare, ChatRendersWithTheModelsTemplate) {
    const DemoText demo = demo_text();
    auto request = parse_chat_request(R"({"messages": [{"role": "user", "content": "12+34="},
        {"role": "assistant", "content": "46"}, {"role": "user", "content": "123+456="}]})");
    ASSERT_TRUE(request);
    auto prepared = prepare_request(*request, demo.view(), 64);
    ASSERT_TRUE(prepared) << prepared.error().message;
    // "12+34=46<|end|>123+456=": the demo's template (README of models/gpt-oss-demo).
    EXPECT_EQ(prepared->prompt, (std::vector<int32_t>{1, 2, 40, 3, 4, 45, 4, 6, 48, 1, 2, 3, 40, 4, 5, 6, 45}));
    EXPECT_EQ(prepared->max_tokens, 64u - 17u);  // no max_tokens: what the context leaves
}

TEST(ServePrepare, CompletionEncodesThePromptText) {
    const DemoText demo = demo_text();
    auto request = parse_completion_request(R"({"prompt": "123+456=", "max_tokens": 4, "stop": "9"})");
    ASSERT_TRUE(request);
    auto prepared = prepare_request(*request, demo.view(), 64);
    ASSERT_TRUE(prepared);
    EXPECT_EQ(prepared->prompt, (std::vector<int32_t>{1, 2, 3, 40, 4, 5, 6, 45}));
    EXPECT_EQ(prepared->max_tokens, 4u);
    EXPECT_EQ(prepared->stop, std::vector<std::string>{"9"});
}

TEST(ServePrepare, BeyondTheContextIsRefusedBeforeQueueing) {
    const DemoText demo = demo_text();
    auto long_prompt = parse_completion_request(R"({"prompt": "123+456=123+456="})");
    ASSERT_TRUE(long_prompt);
    auto refused = prepare_request(*long_prompt, demo.view(), 16);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().status, 400);
    EXPECT_EQ(refused.error().code.value_or(""), "context_length_exceeded");
    EXPECT_EQ(refused.error().param.value_or(""), "prompt");

    auto too_many = parse_completion_request(R"({"prompt": "123+456=", "max_tokens": 9})");
    ASSERT_TRUE(too_many);
    auto refused_tokens = prepare_request(*too_many, demo.view(), 16);
    ASSERT_FALSE(refused_tokens);
    EXPECT_EQ(refused_tokens.error().code.value_or(""), "context_length_exceeded");
    EXPECT_EQ(refused_tokens.error().param.value_or(""), "max_tokens");
    EXPECT_TRUE(prepare_request(*too_many, demo.view(), 17));  // 8 + 9 fit in 17
}

}  // namespace
}  // namespace stormo::serve

namespace stormo::serve {
namespace {

TEST(ServePrepare, AssistantReasoningAndToolCallArgumentsReachTemplatesAsTheyReadThem) {
    const DemoText demo = demo_text();
    // A template that prints what gpt-oss's reads: `thinking`, and arguments as an object.
    auto probe = text::ChatTemplate::parse(
        "{% for m in messages %}{% if m.role == 'assistant' %}[{{ m.thinking }}|{{ m.reasoning_content }}|"
        "{{ m.tool_calls[0].function.arguments.city }}|{{ m.tool_calls[1].function.arguments }}]{% endif %}{% endfor %}",
        "probe");
    ASSERT_TRUE(probe) << probe.error().message;
    auto request = parse_chat_request(R"({"messages": [{"role": "user", "content": "weather?"},
        {"role": "assistant", "content": null, "reasoning_content": "ask the tool",
         "tool_calls": [{"type": "function", "function": {"name": "w", "arguments": "{\"city\": \"Rome\"}"}},
                        {"type": "function", "function": {"name": "x", "arguments": "not json"}}]},
        {"role": "tool", "content": "sunny"}]})");
    ASSERT_TRUE(request) << request.error().message;
    auto prepared = prepare_request(*request, PromptText{&demo.tokenizer, &*probe, std::nullopt}, 4096);
    ASSERT_TRUE(prepared) << prepared.error().message;
    auto text = demo.tokenizer.decode(prepared->prompt);
    ASSERT_TRUE(text);
    // The demo's vocabulary has no '[', '|', ']' or capitals: they encode as <|unk|>.
    EXPECT_EQ(*text, "<|unk|>ask the tool<|unk|>ask the tool<|unk|><|unk|>ome<|unk|>not json<|unk|>");
    // The request itself is unchanged (the arguments are still text there).
    const text::Value& call = request->messages.as_list()[1].find("tool_calls")->as_list()[0];
    EXPECT_TRUE(call.find("function")->find("arguments")->is_string());
}

}  // namespace
}  // namespace stormo::serve

namespace stormo::serve {
namespace {

// A template that traps in C++ (INT64_MIN // -1 took `stormo serve` down with SIGFPE) is refused
// as this request's 400, and the same template renders the next request.
TEST(ServePrepare, ATemplateErrorIsThisRequestsErrorAndTheNextRequestRenders) {
    const DemoText demo = demo_text();
    auto dividing = text::ChatTemplate::parse("{{ (messages[0].content|int) // -1 }}", "divide.jinja");
    ASSERT_TRUE(dividing) << dividing.error().message;
    const PromptText view{&demo.tokenizer, &*dividing, std::nullopt};
    auto trapping = parse_chat_request(R"({"messages": [{"role": "user", "content": "-9223372036854775808"}]})");
    ASSERT_TRUE(trapping);
    auto refused = prepare_request(*trapping, view, 64);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().status, 400);
    EXPECT_EQ(refused.error().message,
              "the chat template refused the messages: divide.jinja:1: integer overflow in // (integers here are 64-bit)");
    auto fine = parse_chat_request(R"({"messages": [{"role": "user", "content": "-123"}]})");
    ASSERT_TRUE(fine);
    auto prepared = prepare_request(*fine, view, 64);
    ASSERT_TRUE(prepared) << prepared.error().message;
    EXPECT_EQ(demo.tokenizer.decode(prepared->prompt).value_or(""), "123");
}

}  // namespace
}  // namespace stormo::serve
