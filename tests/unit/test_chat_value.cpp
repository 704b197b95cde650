// Value and its JSON: parsing keeps key order (templates print schemas in the order written),
// to_json writes what Python's json.dumps writes, str() and repr() are Python's.
#include <gtest/gtest.h>

#include <string>

#include "jinja/chat_value.hpp"
#include "jinja/python_text.hpp"

namespace {

using stormo::ErrorKind;
using stormo::text::JsonStyle;
using stormo::text::parse_json_value;
using stormo::text::python_float_repr;
using stormo::text::python_str;
using stormo::text::to_json;
using stormo::text::Value;

TEST(ChatValue, ParseKeepsKeyOrder) {
    auto v = parse_json_value(R"({"zeta": 1, "alpha": {"y": true, "b": null}, "mid": [3, "x"]})", "t.json");
    ASSERT_TRUE(v) << v.error().message;
    ASSERT_TRUE(v->is_object());
    const auto& members = v->as_object();
    ASSERT_EQ(members.size(), 3u);
    EXPECT_EQ(members[0].first, "zeta");
    EXPECT_EQ(members[1].first, "alpha");
    EXPECT_EQ(members[2].first, "mid");
    EXPECT_EQ(members[1].second.as_object()[0].first, "y");
    EXPECT_EQ(to_json(*v), R"({"zeta": 1, "alpha": {"y": true, "b": null}, "mid": [3, "x"]})");
}

TEST(ChatValue, ParseScalars) {
    auto v = parse_json_value(R"([1, -2, 1.0, 2.5e3, "\u00e9\n\ud83d\ude00", false, 100000000000000000000000])", "t.json");
    ASSERT_TRUE(v) << v.error().message;
    const auto& items = v->as_list();
    EXPECT_TRUE(items[0].is_int());
    EXPECT_EQ(items[1].as_int(), -2);
    EXPECT_TRUE(items[2].is_float());  // 1.0 stays a float, as in Python
    EXPECT_EQ(items[3].as_double(), 2500.0);
    EXPECT_EQ(items[4].as_string(), "é\n😀");
    EXPECT_FALSE(items[5].as_bool());
    EXPECT_TRUE(items[6].is_float());  // beyond 64 bits: the nearest double
    auto scalar = parse_json_value("\"top\"", "t.json");
    ASSERT_TRUE(scalar) << scalar.error().message;
    EXPECT_EQ(scalar->as_string(), "top");
}

TEST(ChatValue, RepeatedKeyKeepsFirstPlaceAndLastValue) {
    auto v = parse_json_value(R"({"a": 1, "b": 2, "a": 3})", "t.json");
    ASSERT_TRUE(v);
    EXPECT_EQ(to_json(*v), R"({"a": 3, "b": 2})");
}

TEST(ChatValue, MalformedJsonNamesTheSource) {
    for (const char* text : {R"({"a": )", R"({"a": 1} trailing)", "[1, 2", "{'a': 1}", ""}) {
        auto v = parse_json_value(text, "models/x/tokenizer_config.json");
        ASSERT_FALSE(v) << text;
        EXPECT_EQ(v.error().kind, ErrorKind::format) << text;
        EXPECT_EQ(v.error().message.rfind("models/x/tokenizer_config.json: malformed JSON", 0), 0u) << v.error().message;
    }
}

TEST(ChatValue, ToJsonMatchesPythonJsonDumps) {
    Value v = Value::object({{"s", "é\"\\\n\t\x01\x7f"},
                             {"f", Value::list({1.5, 2.0, 1e-7, 1e16, 0.1, -0.0, 1e22})},
                             {"i", Value(int64_t{-7})},
                             {"n", Value()},
                             {"e", Value::list()},
                             {"o", Value::object()}});
    EXPECT_EQ(to_json(v),
              "{\"s\": \"é\\\"\\\\\\n\\t\\u0001\x7f\", \"f\": [1.5, 2.0, 1e-07, 1e+16, 0.1, -0.0, 1e+22], \"i\": -7, "
              "\"n\": null, \"e\": [], \"o\": {}}");
    EXPECT_EQ(to_json(Value::object({{"a", Value::list({1, Value::object({{"b", true}})})}, {"c", Value::list()}}), 2),
              "{\n  \"a\": [\n    1,\n    {\n      \"b\": true\n    }\n  ],\n  \"c\": []\n}");
    EXPECT_EQ(to_json(Value::tuple({1, "x"})), R"([1, "x"])");
}

TEST(ChatValue, JsonStyleArguments) {
    Value v = Value::object({{"b", "😀"}, {"a", 1}});
    JsonStyle sorted;
    sorted.sort_keys = true;
    EXPECT_EQ(to_json(v, sorted), R"({"a": 1, "b": "😀"})");
    JsonStyle compact;
    compact.item_separator = ",";
    compact.key_separator = ":";
    EXPECT_EQ(to_json(v, compact), R"({"b":"😀","a":1})");
    JsonStyle ascii;
    ascii.ensure_ascii = true;
    EXPECT_EQ(to_json(v, ascii), R"({"b": "\ud83d\ude00", "a": 1})");
}

TEST(ChatValue, PythonFloatRepr) {
    EXPECT_EQ(python_float_repr(0.1 + 0.2), "0.30000000000000004");
    EXPECT_EQ(python_float_repr(1.0), "1.0");
    EXPECT_EQ(python_float_repr(1e16), "1e+16");
    EXPECT_EQ(python_float_repr(1e15), "1000000000000000.0");
    EXPECT_EQ(python_float_repr(0.0001), "0.0001");
    EXPECT_EQ(python_float_repr(0.00001), "1e-05");
    EXPECT_EQ(python_float_repr(1.5e-300), "1.5e-300");
    EXPECT_EQ(python_float_repr(123456789012345678.0), "1.2345678901234568e+17");
    EXPECT_EQ(python_float_repr(-2.5), "-2.5");
}

TEST(ChatValue, PythonStrOfContainers) {
    Value v = Value::list({Value(), true, false, 3, 2.5, "it's", "q\"x", Value::object({{"k", "v"}}), Value::tuple({1})});
    EXPECT_EQ(python_str(v), R"([None, True, False, 3, 2.5, "it's", 'q"x', {'k': 'v'}, (1,)])");
    EXPECT_EQ(python_str(Value("plain")), "plain");
}

TEST(ChatValue, SetReplacesInPlaceAndFindLooksUp) {
    Value v = Value::object({{"a", 1}, {"b", 2}});
    v.set("a", 9);
    v.set("c", 3);
    EXPECT_EQ(to_json(v), R"({"a": 9, "b": 2, "c": 3})");
    ASSERT_NE(v.find("b"), nullptr);
    EXPECT_EQ(v.find("b")->as_int(), 2);
    EXPECT_EQ(v.find("z"), nullptr);
    EXPECT_EQ(Value("s").find("a"), nullptr);
}

}  // namespace
