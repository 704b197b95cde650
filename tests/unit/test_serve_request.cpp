// stormo serve's request bodies: every field read with its type and range checked, refusals in
// OpenAI's error shape naming the field.
#include <gtest/gtest.h>

#include "serve/api_error.hpp"
#include "serve/openai_request.hpp"

namespace stormo::serve {
namespace {

CompletionRequest chat_ok(const std::string& body) {
    auto r = parse_chat_request(body);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
    return r ? *r : CompletionRequest{};
}

ApiError chat_refused(const std::string& body) {
    auto r = parse_chat_request(body);
    EXPECT_FALSE(r.has_value()) << body;
    return r ? ApiError{} : r.error();
}

TEST(ServeRequest, ReadsEveryChatField) {
    const CompletionRequest r = chat_ok(R"({"model": "m", "messages": [{"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "123+"}, {"type": "text", "text": "456="}]}],
        "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 7, "max_tokens": 5,
        "max_completion_tokens": 9, "stop": ["\n", "END"], "n": 1, "stream": true, "stream_options": {"include_usage": true},
        "chat_template_kwargs": {"enable_thinking": false}, "reasoning_effort": "low",
        "tools": [{"type": "function", "function": {"name": "f"}}]})");
    EXPECT_EQ(r.endpoint, Endpoint::chat);
    ASSERT_EQ(r.messages.as_list().size(), 2u);
    EXPECT_EQ(r.messages.as_list()[1].find("content")->as_string(), "123+456=");  // text parts joined
    EXPECT_FLOAT_EQ(r.sampling.temperature, 0.7f);
    EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
    EXPECT_EQ(r.sampling.top_k, 40);
    EXPECT_FLOAT_EQ(r.sampling.min_p, 0.05f);
    EXPECT_EQ(r.sampling.seed, 7u);
    EXPECT_EQ(r.max_tokens, 9);  // max_completion_tokens wins over the deprecated max_tokens
    EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "END"}));
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.include_usage);
    EXPECT_FALSE(r.template_options.find("enable_thinking")->as_bool());
    EXPECT_EQ(r.template_options.find("reasoning_effort")->as_string(), "low");
    EXPECT_TRUE(r.template_options.find("tools")->is_list());
}

TEST(ServeRequest, DefaultsAreGreedyUnlimitedAndUnstreamed) {
    const CompletionRequest r = chat_ok(R"({"messages": [{"role": "user", "content": "hi"}], "stop": "x", "max_tokens": null})");
    EXPECT_EQ(r.sampling.temperature, 0.0f);
    EXPECT_FALSE(r.max_tokens.has_value());
    EXPECT_FALSE(r.stream);
    EXPECT_EQ(r.stop, std::vector<std::string>{"x"});  // a single string is one stop sequence
}

TEST(ServeRequest, RefusalsNameTheField) {
    struct Case {
        const char* body;
        const char* param;
    };
    const Case cases[] = {
        {R"({"messages": "hi"})", "messages"},
        {R"({})", "messages"},
        {R"({"messages": []})", "messages"},
        {R"({"messages": [{"role": "wizard", "content": "hi"}]})", "messages[0].role"},
        {R"({"messages": [{"content": "hi"}]})", "messages[0].role"},
        {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
        {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": -1})", "max_tokens"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0})", "max_tokens"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100000000000})", "max_tokens"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": "5"})", "max_tokens"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 1.5})", "max_completion_tokens"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "n": 2})", "n"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "temperature": "hot"})", "temperature"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "temperature": 3})", "temperature"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "top_p": 0})", "top_p"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "top_k": -1})", "top_k"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "min_p": 1})", "min_p"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "stop": 5})", "stop"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "stop": [""]})", "stop"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "stream": "yes"})", "stream"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "stream_options": {"include_usage": 1}})", "stream_options.include_usage"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "reasoning_effort": "max"})", "reasoning_effort"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": []})", "chat_template_kwargs"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "tools": {}})", "tools"},
        {R"({"messages": [{"role": "user", "content": "hi"}], "model": 3})", "model"},
    };
    for (const Case& c : cases) {
        const ApiError e = chat_refused(c.body);
        EXPECT_EQ(e.status, 400) << c.body;
        EXPECT_EQ(e.type, "invalid_request_error") << c.body;
        EXPECT_EQ(e.param.value_or("<none>"), c.param) << c.body << " -> " << e.message;
        EXPECT_FALSE(e.message.empty());
    }
}

TEST(ServeRequest, MalformedJsonAndNonObjectsAreRefused) {
    for (const char* body : {"{", "", "[1, 2]", "\"text\"", "{\"messages\": [}", "nul"}) {
        const ApiError e = chat_refused(body);
        EXPECT_EQ(e.status, 400) << body;
        EXPECT_FALSE(e.param.has_value()) << body;
    }
}

TEST(ServeRequest, AssistantWithToolCallsMayHaveNoContent) {
    const CompletionRequest r = chat_ok(R"({"messages": [{"role": "user", "content": "weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "content": "sunny"}]})");
    EXPECT_EQ(r.messages.as_list()[1].find("content")->as_string(), "");
    EXPECT_TRUE(r.messages.as_list()[1].find("tool_calls")->is_list());
}

TEST(ServeRequest, CompletionTakesAPromptStringOrOneStringList) {
    auto a = parse_completion_request(R"({"prompt": "123+456=", "max_tokens": 4})");
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->prompt, "123+456=");
    EXPECT_EQ(a->endpoint, Endpoint::completion);
    auto b = parse_completion_request(R"({"prompt": ["rev:ab="]})");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->prompt, "rev:ab=");
    for (const char* body : {R"({})", R"({"prompt": 5})", R"({"prompt": ["a", "b"]})", R"({"prompt": ""})"}) {
        auto r = parse_completion_request(body);
        ASSERT_FALSE(r) << body;
        EXPECT_EQ(r.error().param.value_or(""), "prompt") << body;
    }
}

// echo, suffix and best_of were ignored: 200 with another text than asked for. Refused by name
// now, their neutral values still accepted.
TEST(ServeRequest, CompletionFieldsTheServerDoesNotServeAreRefused) {
    for (const char* extra : {R"("echo": true)", R"("suffix": "end")", R"("best_of": 3)", R"("suffix": 5)"}) {
        auto r = parse_completion_request(std::string(R"({"prompt": "1+1=", )") + extra + "}");
        ASSERT_FALSE(r) << extra;
        const std::string key = std::string(extra).substr(1, std::string(extra).find('"', 1) - 1);
        EXPECT_EQ(r.error().param.value_or(""), key) << extra;
    }
    for (const char* extra : {R"("echo": false)", R"("suffix": null)", R"("suffix": "")", R"("best_of": 1)"}) {
        auto r = parse_completion_request(std::string(R"({"prompt": "1+1=", )") + extra + "}");
        EXPECT_TRUE(r) << extra << ": " << r.error().message;
    }
}

TEST(ServeRequest, TokenizeAndDetokenizeBodies) {
    auto t = parse_tokenize_request(R"({"content": "12+3=", "add_special": true})");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->content, "12+3=");
    EXPECT_TRUE(t->add_special);
    EXPECT_FALSE(parse_tokenize_request(R"({"content": 5})"));
    auto d = parse_detokenize_request(R"({"tokens": [1, 2, 48]})");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->tokens, (std::vector<int32_t>{1, 2, 48}));
    EXPECT_FALSE(parse_detokenize_request(R"({"tokens": [1, -2]})"));
    EXPECT_FALSE(parse_detokenize_request(R"({"tokens": "1 2"})"));
}

TEST(ServeRequest, ErrorBodyHasOpenAIsShape) {
    auto e = bad_request("too long", "messages", "context_length_exceeded");
    EXPECT_EQ(error_body(e.value()),
              R"({"error": {"message": "too long", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})");
    EXPECT_EQ(error_body(bad_request("bad").value()),
              R"({"error": {"message": "bad", "type": "invalid_request_error", "param": null, "code": null}})");
}

// A message quoting bytes of the request (GET /v1/models/%ff%fe decodes to them) stayed invalid
// UTF-8 inside the body, which then was no JSON; each invalid sequence becomes U+FFFD.
TEST(ServeRequest, ErrorBodyIsValidUtf8WhateverTheRequestHeld) {
    EXPECT_EQ(error_body(bad_request("The model '\xff\xfe' does not exist", "x\xc3").value()),
              "{\"error\": {\"message\": \"The model '\xef\xbf\xbd\xef\xbf\xbd' does not exist\", "
              "\"type\": \"invalid_request_error\", \"param\": \"x\xef\xbf\xbd\", \"code\": null}}");
}

TEST(ServeRequest, LogprobsOnBothEndpointsWithTheirRanges) {
    const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
    EXPECT_FALSE(chat_ok("{" + user + "}").top_logprobs.has_value());
    EXPECT_FALSE(chat_ok("{" + user + R"(, "logprobs": false})").top_logprobs.has_value());
    EXPECT_EQ(chat_ok("{" + user + R"(, "logprobs": true})").top_logprobs, 0u);
    EXPECT_EQ(chat_ok("{" + user + R"(, "logprobs": true, "top_logprobs": 20})").top_logprobs, 20u);
    EXPECT_EQ(chat_refused("{" + user + R"(, "logprobs": true, "top_logprobs": 21})").param, "top_logprobs");
    EXPECT_EQ(chat_refused("{" + user + R"(, "logprobs": true, "top_logprobs": -1})").param, "top_logprobs");
    EXPECT_EQ(chat_refused("{" + user + R"(, "top_logprobs": 2})").param, "top_logprobs");  // needs logprobs: true
    EXPECT_EQ(chat_refused("{" + user + R"(, "logprobs": 3})").param, "logprobs");            // a boolean in chats

    auto completion = [](const std::string& extra) { return parse_completion_request(R"({"prompt": "1+1="})" + extra); };
    auto with = [&](const std::string& field) {
        auto r = parse_completion_request(R"({"prompt": "1+1=", )" + field + "}");
        EXPECT_TRUE(r) << field;
        return r ? r->top_logprobs : std::nullopt;
    };
    auto refused = [&](const std::string& field) {
        auto r = parse_completion_request(R"({"prompt": "1+1=", )" + field + "}");
        EXPECT_FALSE(r) << field;
        return r ? std::string() : r.error().param.value_or("");
    };
    EXPECT_FALSE(completion("")->top_logprobs.has_value());
    EXPECT_EQ(with(R"("logprobs": 0)"), 0u);
    EXPECT_EQ(with(R"("logprobs": 5)"), 5u);
    EXPECT_FALSE(with(R"("logprobs": null)").has_value());
    EXPECT_EQ(refused(R"("logprobs": 21)"), "logprobs");
    EXPECT_EQ(refused(R"("logprobs": -1)"), "logprobs");
    EXPECT_EQ(refused(R"("logprobs": true)"), "logprobs");
}

}  // namespace
}  // namespace stormo::serve

namespace stormo::serve {
namespace {

TEST(ServeRequest, SpeculationPerRequestIsReadAndCheckedByField) {
    const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
    const CompletionRequest r = chat_ok("{" + messages + R"(, "speculate": "context", "draft_max": 4})");
    EXPECT_EQ(r.speculate, SpeculateMode::context);
    EXPECT_EQ(r.draft_max, 4u);
    const CompletionRequest none = chat_ok("{" + messages + "}");
    EXPECT_FALSE(none.speculate.has_value());
    EXPECT_FALSE(none.draft_max.has_value());
    for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
             {R"("speculate": "fast")", "speculate"},
             {R"("speculate": 3)", "speculate"},
             {R"("draft_max": 0)", "draft_max"},
             {R"("draft_max": 65)", "draft_max"},
             {R"("draft_max": "4")", "draft_max"}}) {
        const ApiError e = chat_refused("{" + messages + ", " + body + "}");
        EXPECT_EQ(e.status, 400) << body;
        EXPECT_EQ(e.param.value_or("<none>"), field) << body;
        EXPECT_NE(e.message.find(field), std::string::npos) << e.message;
    }
    // mtp is read here; whether the served model has the layer loaded is the worker's to answer.
    EXPECT_EQ(chat_ok("{" + messages + R"(, "speculate": "mtp"})").speculate, SpeculateMode::mtp);
}

}  // namespace
}  // namespace stormo::serve
