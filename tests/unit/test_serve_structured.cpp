// Structured output in request bodies (serve/structured_request.hpp): response_format's three
// types, grammar, llama-server's json_schema, on both endpoints, and every refusal naming its field.
#include <gtest/gtest.h>

#include "constrain/grammar_matcher.hpp"
#include "serve/openai_request.hpp"

namespace stormo::serve {
namespace {

const std::string kMessages = R"("messages": [{"role": "user", "content": "hi"}])";

bool grammar_accepts(const CompletionRequest& r, std::string_view text) {
    constrain::GrammarMatcher m(r.grammar);
    const auto s = m.walk(m.start(), text);
    return s != constrain::GrammarMatcher::kDead && m.accepts(s);
}

CompletionRequest chat_ok(const std::string& fields) {
    auto r = parse_chat_request("{" + kMessages + ", " + fields + "}");
    EXPECT_TRUE(r.has_value()) << fields << ": " << (r ? "" : r.error().message);
    return r ? *r : CompletionRequest{};
}

ApiError chat_refused(const std::string& fields) {
    auto r = parse_chat_request("{" + kMessages + ", " + fields + "}");
    EXPECT_FALSE(r.has_value()) << fields;
    return r ? ApiError{} : r.error();
}

TEST(ServeStructured, NoFieldOrTextMeansNoGrammar) {
    EXPECT_EQ(chat_ok(R"("max_tokens": 3)").grammar, nullptr);
    EXPECT_EQ(chat_ok(R"("response_format": {"type": "text"})").grammar, nullptr);
    EXPECT_EQ(chat_ok(R"("response_format": null, "grammar": null)").grammar, nullptr);
}

TEST(ServeStructured, JsonObjectJsonSchemaGrammarAndLlamaServerForms) {
    const auto object = chat_ok(R"("response_format": {"type": "json_object"})");
    ASSERT_NE(object.grammar, nullptr);
    EXPECT_TRUE(grammar_accepts(object, R"({"a": 1})"));
    EXPECT_FALSE(grammar_accepts(object, "1"));
    const auto schema = chat_ok(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "strict": true,
        "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false}}})");
    EXPECT_TRUE(grammar_accepts(schema, R"({"ok": false})"));
    EXPECT_FALSE(grammar_accepts(schema, R"({"ok": 1})"));
    const auto gbnf = chat_ok(R"("grammar": "root ::= \"yes\" | \"no\"")");
    EXPECT_TRUE(grammar_accepts(gbnf, "no"));
    const auto llama_object = chat_ok(R"("response_format": {"type": "json_object", "schema": {"type": "integer"}})");
    EXPECT_TRUE(grammar_accepts(llama_object, "12"));
    const auto llama_schema = chat_ok(R"("json_schema": {"enum": ["a"]})");
    EXPECT_TRUE(grammar_accepts(llama_schema, R"("a")"));
    auto completion = parse_completion_request(R"({"prompt": "p", "response_format": {"type": "json_object"}})");
    ASSERT_TRUE(completion.has_value());
    EXPECT_NE(completion->grammar, nullptr);
}

TEST(ServeStructured, RefusalsNameTheFieldTheKeywordAndThePlace) {
    ApiError e = chat_refused(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n",
        "schema": {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}}}})");
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "response_format.json_schema.schema");
    EXPECT_EQ(e.message, "'response_format.json_schema.schema' $.properties.when.format: the keyword 'format' is not supported in structured output");
    e = chat_refused(R"("response_format": {"type": "json_schema", "json_schema": {"strict": true, "schema": {"type": "integer", "x": 1}}})");
    EXPECT_EQ(e.message, "'response_format.json_schema.schema' $.x: unknown keyword 'x' (strict schemas admit none)");
    EXPECT_TRUE(chat_ok(R"("response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "integer", "x": 1}}})").grammar);
    e = chat_refused(R"("grammar": "root ::= \"a\"\nroot ::= (")");
    EXPECT_EQ(e.param, "grammar");
    EXPECT_EQ(e.message, "'grammar': grammar line 2, column 11: expected ')' to close the group opened at line 2, column 10");
    EXPECT_EQ(chat_refused(R"("grammar": 3)").param, "grammar");
    EXPECT_EQ(chat_refused(R"("response_format": "json")").param, "response_format");
    EXPECT_EQ(chat_refused(R"("response_format": {"type": "yaml"})").param, "response_format.type");
    EXPECT_EQ(chat_refused(R"("response_format": {"type": "json_schema"})").param, "response_format.json_schema");
    EXPECT_EQ(chat_refused(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n"}})").param,
              "response_format.json_schema.schema");
    EXPECT_EQ(chat_refused(R"("response_format": {"type": "json_schema", "json_schema": {"strict": "yes", "schema": {}}})").param,
              "response_format.json_schema.strict");
    e = chat_refused(R"("response_format": {"type": "json_object"}, "grammar": "root ::= \"a\"")");
    EXPECT_EQ(e.param, "grammar");
    EXPECT_EQ(e.message, "'grammar' and 'response_format' both constrain the answer; give one");
}

}  // namespace
}  // namespace stormo::serve
