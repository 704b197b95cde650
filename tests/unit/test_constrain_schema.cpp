// JSON Schema to grammar (constrain/json_schema_grammar.hpp): each keyword compiled, checked by
// the texts its grammar accepts and refuses; each keyword refused, by its message and path.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "constrain/gbnf.hpp"
#include "constrain/grammar_matcher.hpp"
#include "constrain/json_schema_grammar.hpp"

namespace stormo::constrain {
namespace {

text::Value json(std::string_view s) {
    auto v = text::parse_json_value(s, "test");
    EXPECT_TRUE(v.has_value()) << s;
    return v ? *v : text::Value();
}

class SchemaGrammar {
public:
    explicit SchemaGrammar(std::string_view schema, bool strict = false) {
        auto gbnf = json_schema_to_gbnf(json(schema), strict);
        EXPECT_TRUE(gbnf.has_value()) << schema << ": " << (gbnf ? "" : gbnf.error().message);
        auto g = parse_gbnf(gbnf ? *gbnf : "root ::= \"\"");
        EXPECT_TRUE(g.has_value()) << (gbnf ? *gbnf : "") << "\n" << (g ? "" : g.error().message);
        grammar_ = std::make_shared<const Grammar>(g ? std::move(*g) : Grammar{});
    }
    bool accepts(std::string_view text) const {
        GrammarMatcher m(grammar_);
        const auto s = m.walk(m.start(), text);
        return s != GrammarMatcher::kDead && m.accepts(s);
    }

private:
    std::shared_ptr<const Grammar> grammar_;
};

std::string refusal(std::string_view schema, bool strict = false) {
    auto gbnf = json_schema_to_gbnf(json(schema), strict);
    EXPECT_FALSE(gbnf.has_value()) << schema;
    return gbnf ? std::string() : gbnf.error().message;
}

TEST(JsonSchemaGrammar, ScalarTypes) {
    SchemaGrammar s(R"({"type": "string"})");
    EXPECT_TRUE(s.accepts(R"("hi \"there\" \u00e9 \n")"));
    EXPECT_FALSE(s.accepts(R"("a)"));
    EXPECT_FALSE(s.accepts("\"a\nb\""));  // a raw control character
    EXPECT_FALSE(s.accepts("12"));
    SchemaGrammar i(R"({"type": "integer"})");
    EXPECT_TRUE(i.accepts("-42"));
    EXPECT_TRUE(i.accepts("0"));
    EXPECT_FALSE(i.accepts("01"));
    EXPECT_FALSE(i.accepts("1.5"));
    SchemaGrammar n(R"({"type": "number"})");
    EXPECT_TRUE(n.accepts("1.5e-3"));
    EXPECT_TRUE(n.accepts("-0.25"));
    EXPECT_FALSE(n.accepts("1."));
    SchemaGrammar b(R"({"type": "boolean"})");
    EXPECT_TRUE(b.accepts("true"));
    EXPECT_FALSE(b.accepts("null"));
    SchemaGrammar z(R"({"type": "null"})");
    EXPECT_TRUE(z.accepts("null"));
    SchemaGrammar either(R"({"type": ["string", "null"]})");
    EXPECT_TRUE(either.accepts("null"));
    EXPECT_TRUE(either.accepts(R"("x")"));
    EXPECT_FALSE(either.accepts("1"));
}

TEST(JsonSchemaGrammar, ObjectsWithRequiredAndOptionalPropertiesInOrder) {
    SchemaGrammar s(R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string"}}},
                        "required": ["name", "tags"], "additionalProperties": false})");
    EXPECT_TRUE(s.accepts(R"({"name": "Ada", "tags": []})"));
    EXPECT_TRUE(s.accepts(R"({"name":"Ada","tags":["x", "y"],"age":36})"));
    EXPECT_TRUE(s.accepts("{\n  \"name\": \"Ada\",\n  \"tags\": [\"x\"]\n}"));
    EXPECT_FALSE(s.accepts(R"({"name": "Ada"})"));                      // tags is required
    EXPECT_FALSE(s.accepts(R"({"name": "Ada", "tags": [], "x": 1})"));  // no other property
    EXPECT_FALSE(s.accepts(R"({"name": 1, "tags": []})"));
}

TEST(JsonSchemaGrammar, ObjectsWithoutRequiredPropertiesMayHoldAnySubsetInOrder) {
    SchemaGrammar s(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                        "c": {"type": "integer"}}})");
    EXPECT_TRUE(s.accepts("{}"));
    EXPECT_TRUE(s.accepts(R"({"b": 2})"));
    EXPECT_TRUE(s.accepts(R"({"a": 1, "c": 3})"));
    EXPECT_TRUE(s.accepts(R"({"a": 1, "b": 2, "c": 3})"));
    EXPECT_FALSE(s.accepts(R"({, "b": 2})"));
    EXPECT_FALSE(s.accepts(R"({"a": 1,})"));
}

TEST(JsonSchemaGrammar, MapsFromAdditionalProperties) {
    SchemaGrammar s(R"({"type": "object", "additionalProperties": {"type": "number"}})");
    EXPECT_TRUE(s.accepts(R"({"x": 1, "y": 2.5})"));
    EXPECT_FALSE(s.accepts(R"({"x": "1"})"));
    SchemaGrammar any(R"({"type": "object"})");
    EXPECT_TRUE(any.accepts(R"({"x": {"y": [1, "z", null]}})"));
    SchemaGrammar closed(R"({"type": "object", "additionalProperties": false})");
    EXPECT_TRUE(closed.accepts("{}"));
    EXPECT_FALSE(closed.accepts(R"({"x": 1})"));
}

TEST(JsonSchemaGrammar, EnumAndConstAreLiterals) {
    SchemaGrammar e(R"({"enum": ["red", "green", 3, null, {"a": [1]}]})");
    EXPECT_TRUE(e.accepts(R"("green")"));
    EXPECT_TRUE(e.accepts("3"));
    EXPECT_TRUE(e.accepts("null"));
    EXPECT_TRUE(e.accepts(R"({"a":[1]})"));
    EXPECT_FALSE(e.accepts(R"("blue")"));
    SchemaGrammar c(R"({"const": "fixed \"value\""})");
    EXPECT_TRUE(c.accepts(R"("fixed \"value\"")"));
    EXPECT_FALSE(c.accepts(R"("fixed")"));
}

TEST(JsonSchemaGrammar, ArraysWithItemsAndBounds) {
    SchemaGrammar s(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
    EXPECT_TRUE(s.accepts("[1]"));
    EXPECT_TRUE(s.accepts("[1, 2, 3]"));
    EXPECT_FALSE(s.accepts("[]"));
    EXPECT_FALSE(s.accepts("[1, 2, 3, 4]"));
    EXPECT_FALSE(s.accepts(R"(["a"])"));
    SchemaGrammar open(R"({"type": "array", "minItems": 2})");
    EXPECT_TRUE(open.accepts(R"([1, "b", [], {}])"));
    EXPECT_FALSE(open.accepts("[1]"));
    SchemaGrammar none(R"({"type": "array", "maxItems": 0})");
    EXPECT_TRUE(none.accepts("[]"));
    EXPECT_FALSE(none.accepts("[1]"));
}

TEST(JsonSchemaGrammar, StringLengths) {
    SchemaGrammar s(R"({"type": "string", "minLength": 2, "maxLength": 3})");
    EXPECT_TRUE(s.accepts(R"("ab")"));
    EXPECT_TRUE(s.accepts(R"("a\"c")"));  // an escape is one character
    EXPECT_TRUE(s.accepts(R"("éèê")"));   // characters, not bytes
    EXPECT_FALSE(s.accepts("\"a\xF0\x9F\x98\x80\""));  // beyond the BMP: two UTF-16 units, which JavaScript counts
    EXPECT_FALSE(s.accepts(R"("a")"));
    EXPECT_FALSE(s.accepts(R"("abcd")"));
}

TEST(JsonSchemaGrammar, AnyOfOneOfAndAllOfOfOne) {
    SchemaGrammar s(R"({"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"k": {"const": 1}}, "required": ["k"]}]})");
    EXPECT_TRUE(s.accepts("7"));
    EXPECT_TRUE(s.accepts(R"({"k": 1})"));
    EXPECT_FALSE(s.accepts(R"("7")"));
    SchemaGrammar o(R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})");
    EXPECT_TRUE(o.accepts("false"));
    EXPECT_TRUE(o.accepts("null"));
    SchemaGrammar a(R"({"allOf": [{"type": "integer"}]})");
    EXPECT_TRUE(a.accepts("3"));
    EXPECT_FALSE(a.accepts("true"));
}

TEST(JsonSchemaGrammar, RefsToDefsDefinitionsAndRecursion) {
    SchemaGrammar s(R"({"type": "object", "properties": {"home": {"$ref": "#/$defs/address"},
                        "work": {"$ref": "#/definitions/address"}}, "required": ["home"],
                        "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
                        "definitions": {"address": {"type": "object", "properties": {"zip": {"type": "integer"}}, "required": ["zip"]}}})");
    EXPECT_TRUE(s.accepts(R"({"home": {"city": "Oslo"}, "work": {"zip": 150}})"));
    EXPECT_FALSE(s.accepts(R"({"home": {"zip": 150}})"));
    SchemaGrammar tree(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
                           "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                           "required": ["value", "children"], "additionalProperties": false}}})");
    EXPECT_TRUE(tree.accepts(R"({"value": 1, "children": [{"value": 2, "children": []}]})"));
    EXPECT_FALSE(tree.accepts(R"({"value": 1, "children": [{"value": 2}]})"));
    SchemaGrammar escaped(R"({"$ref": "#/$defs/a~1b~01", "$defs": {"a/b~1": {"const": 1}}})");  // RFC 6901 escapes
    EXPECT_TRUE(escaped.accepts("1"));
    SchemaGrammar root(R"({"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}})");
    EXPECT_TRUE(root.accepts("[1, [2, [3]], []]"));
}

TEST(JsonSchemaGrammar, AnnotationsAreIgnoredAndUnknownKeywordsOnlyOutsideStrict) {
    SchemaGrammar s(R"({"title": "T", "description": "d", "default": 1, "examples": [1], "$schema": "x", "type": "integer"})", true);
    EXPECT_TRUE(s.accepts("5"));
    SchemaGrammar lax(R"({"type": "integer", "x-vendor": true})", false);
    EXPECT_TRUE(lax.accepts("5"));
    EXPECT_EQ(refusal(R"({"type": "object", "properties": {"a": {"type": "integer", "x-vendor": true}}})", true),
              "$.properties.a.x-vendor: unknown keyword 'x-vendor' (strict schemas admit none)");
}

TEST(JsonSchemaGrammar, KeywordsItCannotHonourAreRefusedWithTheirPath) {
    EXPECT_EQ(refusal(R"({"type": "object", "properties": {"email": {"type": "string", "format": "email"}}})"),
              "$.properties.email.format: the keyword 'format' is not supported in structured output");
    EXPECT_EQ(refusal(R"({"type": "string", "pattern": "^a+$"})"),
              "$.pattern: the keyword 'pattern' is not supported in structured output");
    EXPECT_EQ(refusal(R"({"type": "array", "items": {"type": "integer", "minimum": 0}})"),
              "$.items.minimum: the keyword 'minimum' is not supported in structured output");
    for (const char* keyword : {"maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "patternProperties",
                                "propertyNames", "minProperties", "maxProperties", "not", "if", "contains", "prefixItems"})
        EXPECT_EQ(refusal(std::string(R"({")") + keyword + R"(": 1})"),
                  std::string("$.") + keyword + ": the keyword '" + keyword + "' is not supported in structured output");
    EXPECT_EQ(refusal(R"({"uniqueItems": true})"), "$.uniqueItems: the keyword 'uniqueItems' is not supported in structured output");
    SchemaGrammar harmless(R"({"type": "array", "uniqueItems": false})");
    EXPECT_TRUE(harmless.accepts("[1, 1]"));
    EXPECT_EQ(refusal(R"({"allOf": [{"type": "integer"}, {"type": "number"}]})"),
              "$.allOf: allOf of more than one schema is not supported");
    EXPECT_EQ(refusal(R"({"$ref": "https://example.com/schema.json"})"),
              "$.$ref: only references inside the schema ('#...') are supported, not 'https://example.com/schema.json'");
    EXPECT_EQ(refusal(R"({"type": "array", "items": [{"type": "integer"}]})"),
              "$.items: an array of item schemas (a tuple) is not supported");
    EXPECT_EQ(refusal(R"({"type": "string", "maxLength": 100000})"), "$.maxLength: bounds above 10000 are not supported");
}

TEST(JsonSchemaGrammar, BrokenSchemasAreRefusedWithTheirPath) {
    EXPECT_EQ(refusal(R"({"$ref": "#/$defs/missing"})"), "$.$ref: '#/$defs/missing' leads nowhere in the schema");
    EXPECT_EQ(refusal(R"({"type": "decimal"})"), "$.type: unknown type 'decimal'");
    EXPECT_EQ(refusal(R"({"type": "object", "properties": {"a": false}})"), "$.properties.a: the schema false admits no value");
    EXPECT_EQ(refusal(R"({"enum": []})"), "$.enum: must be a non-empty array");
    EXPECT_EQ(refusal(R"({"type": "array", "minItems": 3, "maxItems": 2})"), "$: maxItems is below minItems");
    EXPECT_EQ(refusal("[1]"), "$: a schema must be an object or a boolean");
}

TEST(JsonSchemaGrammar, JsonObjectModeIsAnyObject) {
    auto g = parse_gbnf(json_object_gbnf());
    ASSERT_TRUE(g.has_value());
    auto grammar = std::make_shared<const Grammar>(std::move(*g));
    GrammarMatcher m(grammar);
    EXPECT_TRUE(m.accepts(m.walk(m.start(), R"({"a": [1, {"b": null}], "c": "d"})")));
    EXPECT_EQ(m.walk(m.start(), "[1]"), GrammarMatcher::kDead);
}

TEST(JsonSchemaGrammar, LiteralsEscapeWhatGbnfReads) {
    EXPECT_EQ(gbnf_literal("a\"b\\c\n\x01"), R"("a\"b\\c\n\x01")");
}

}  // namespace
}  // namespace stormo::constrain
