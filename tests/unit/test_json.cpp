// Json parsing into the owned tree, and ModelConfig's typed accessors and their error messages.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>

#include "stormo/json.hpp"

namespace stormo {
namespace {

using ::testing::HasSubstr;

ModelConfig config(std::string_view text) {
    auto parsed = ModelConfig::parse(text, "config.json");
    EXPECT_TRUE(parsed) << parsed.error().message;
    return parsed ? *parsed : ModelConfig();
}

TEST(JsonParse, ValuesKeepTheirTypes) {
    auto j = Json::parse(R"({"i": 42, "neg": -7, "big": 18446744073709551615, "d": 1.5, "e": 1e-5,
                             "s": "h\u00e9", "t": true, "f": false, "n": null, "a": [1, "x", [2]], "o": {"k": 3}})",
                         "test.json");
    ASSERT_TRUE(j) << j.error().message;
    ASSERT_EQ(j->type(), Json::Type::object);
    EXPECT_EQ(j->find("i")->type(), Json::Type::integer);
    EXPECT_EQ(*j->find("i")->as_int(), 42);
    EXPECT_EQ(*j->find("neg")->as_int(), -7);
    EXPECT_EQ(j->find("big")->type(), Json::Type::number);  // above INT64_MAX: a double
    EXPECT_FALSE(j->find("big")->as_int());
    EXPECT_EQ(j->find("d")->type(), Json::Type::number);
    EXPECT_DOUBLE_EQ(*j->find("d")->as_double(), 1.5);
    EXPECT_DOUBLE_EQ(*j->find("e")->as_double(), 1e-5);
    EXPECT_EQ(*j->find("s")->as_string(), "h\xc3\xa9");
    EXPECT_EQ(*j->find("t")->as_bool(), true);
    EXPECT_EQ(*j->find("f")->as_bool(), false);
    EXPECT_TRUE(j->find("n")->is_null());
    const auto* a = j->find("a")->as_array();
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->size(), 3u);
    EXPECT_EQ(*(*a)[1].as_string(), "x");
    EXPECT_EQ(*(*(*a)[2].as_array())[0].as_int(), 2);
    EXPECT_EQ(*j->find("o")->find("k")->as_int(), 3);
    EXPECT_EQ(j->find("missing"), nullptr);
    EXPECT_EQ(j->find("i")->find("x"), nullptr);  // not an object
}

TEST(JsonParse, IntegerAccessorsOnNumbers) {
    auto j = Json::parse("[2.0, 2.5, 1e300, -3]", "t");
    ASSERT_TRUE(j);
    const auto& a = *j->as_array();
    EXPECT_EQ(a[0].as_int(), std::optional<int64_t>(2));
    EXPECT_FALSE(a[1].as_int());
    EXPECT_FALSE(a[2].as_int());
    EXPECT_EQ(*a[3].as_double(), -3.0);
    EXPECT_FALSE(a[0].as_string());
    EXPECT_FALSE(a[0].as_bool());
    EXPECT_EQ(a[0].as_array(), nullptr);
    EXPECT_EQ(a[0].as_object(), nullptr);
}

TEST(JsonParse, LargeIntegersStayExact) {
    auto j = Json::parse("[9223372036854775807, -9223372036854775808, 9007199254740993]", "t");
    ASSERT_TRUE(j);
    const auto& a = *j->as_array();
    EXPECT_EQ(*a[0].as_int(), INT64_MAX);
    EXPECT_EQ(*a[1].as_int(), INT64_MIN);
    EXPECT_EQ(*a[2].as_int(), 9007199254740993);
}

TEST(JsonParse, ErrorsNameTheSource) {
    for (std::string_view bad : {"{", "", "{\"a\": }", "[1, 2", "{\"a\": 1} x", "nul"}) {
        auto j = Json::parse(bad, "some/dir/config.json");
        ASSERT_FALSE(j) << bad;
        EXPECT_EQ(j.error().kind, ErrorKind::format);
        EXPECT_THAT(j.error().message, HasSubstr("some/dir/config.json: invalid JSON"));
    }
    auto dup = Json::parse(R"({"a": 1, "a": 2})", "x.json");
    ASSERT_FALSE(dup);
    EXPECT_THAT(dup.error().message, HasSubstr("x.json: invalid JSON: duplicate key \"a\""));
}

TEST(JsonParse, CopiesShareTheTreeSafely) {
    Json copy;
    {
        auto j = Json::parse(R"({"a": [1, 2, 3]})", "t");
        ASSERT_TRUE(j);
        copy = *j;
    }
    EXPECT_EQ(copy.find("a")->as_array()->size(), 3u);
    EXPECT_STREQ(json_type_name(Json::Type::object), "object");
    EXPECT_STREQ(json_type_name(Json::Type::integer), "integer");
    EXPECT_EQ(Json::make_int(5).as_int(), std::optional<int64_t>(5));
}

TEST(JsonModelConfig, TypedAccessors) {
    const ModelConfig c = config(R"({"hidden_size": 64, "rms_norm_eps": 1e-05, "tie": false, "model_type": "gpt_oss",
                                     "architectures": ["GptOssForCausalLM"], "theta": 150000, "bos_token_id": null})");
    EXPECT_EQ(*c.integer("hidden_size"), 64);
    EXPECT_DOUBLE_EQ(*c.number("rms_norm_eps"), 1e-5);
    EXPECT_DOUBLE_EQ(*c.number("theta"), 150000.0);  // an integer is a number too
    EXPECT_EQ(*c.boolean("tie"), false);
    EXPECT_EQ(*c.string("model_type"), "gpt_oss");
    EXPECT_EQ(*c.strings("architectures"), std::vector<std::string>{"GptOssForCausalLM"});
    EXPECT_TRUE(c.has("hidden_size"));
    EXPECT_FALSE(c.has("bos_token_id"));  // null counts as absent
    EXPECT_FALSE(c.has("nothing"));
    EXPECT_EQ(c.source(), "config.json");
}

TEST(JsonModelConfig, MissingAndWrongTypeMessages) {
    const ModelConfig c = config(R"({"hidden_size": "64", "eps": "x", "n": 1.5, "flag": 1, "name": 3, "bos": null})");
    auto missing = ModelConfig(c.root(), "config.json").integer("vocab_size");
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().kind, ErrorKind::missing);
    EXPECT_EQ(missing.error().message, "config.json: field \"vocab_size\" is missing");

    auto wrong = c.integer("hidden_size");
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().kind, ErrorKind::mismatch);
    EXPECT_EQ(wrong.error().message, "config.json: field \"hidden_size\" must be an integer, found string");

    EXPECT_THAT(c.integer("n").error().message, HasSubstr("must be an integer, found number 1.5"));
    EXPECT_EQ(c.number("eps").error().message, "config.json: field \"eps\" must be a number, found string");
    EXPECT_EQ(c.boolean("flag").error().message, "config.json: field \"flag\" must be a boolean, found integer");
    EXPECT_EQ(c.string("name").error().message, "config.json: field \"name\" must be a string, found integer");
    EXPECT_EQ(c.strings("name").error().message, "config.json: field \"name\" must be a list of strings, found integer");
    EXPECT_EQ(c.integer("bos").error().message, "config.json: field \"bos\" is null");
    EXPECT_EQ(c.integer("bos").error().kind, ErrorKind::missing);
}

TEST(JsonModelConfig, EosTokenIdAsOneIntegerOrAList) {
    const ModelConfig one = config(R"({"eos_token_id": 1023})");
    EXPECT_EQ(*one.integers("eos_token_id"), std::vector<int64_t>{1023});
    const ModelConfig list = config(R"({"eos_token_id": [200002, 199999, 200012]})");
    EXPECT_EQ(*list.integers("eos_token_id"), (std::vector<int64_t>{200002, 199999, 200012}));
    const ModelConfig empty = config(R"({"eos_token_id": []})");
    EXPECT_TRUE(empty.integers("eos_token_id")->empty());

    const ModelConfig bad = config(R"({"eos_token_id": [1, "2"], "other": "x"})");
    EXPECT_EQ(bad.integers("eos_token_id").error().message,
              "config.json: field \"eos_token_id\" item 1 must be an integer, found string");
    EXPECT_EQ(bad.integers("other").error().message,
              "config.json: field \"other\" must be an integer or a list of integers, found string");
    EXPECT_THAT(bad.integers("absent").error().message, HasSubstr("is missing"));
}

TEST(JsonModelConfig, NestedObjectNamesItsPath) {
    const ModelConfig c = config(R"({"rope_parameters": {"rope_type": "yarn", "factor": 32.0}, "flat": 3})");
    auto rope = c.object("rope_parameters");
    ASSERT_TRUE(rope) << rope.error().message;
    EXPECT_EQ(rope->source(), "config.json: rope_parameters");
    EXPECT_EQ(*rope->string("rope_type"), "yarn");
    EXPECT_DOUBLE_EQ(*rope->number("factor"), 32.0);
    EXPECT_EQ(rope->number("beta_fast").error().message, "config.json: rope_parameters: field \"beta_fast\" is missing");
    EXPECT_EQ(c.object("flat").error().message, "config.json: field \"flat\" must be an object, found integer");
    EXPECT_THAT(c.object("rope_scaling").error().message, HasSubstr("\"rope_scaling\" is missing"));
}

TEST(JsonModelConfig, IntegerAnyTakesTheFirstPresentSpelling) {
    const ModelConfig hub = config(R"({"num_experts": 128, "num_local_experts": null})");
    EXPECT_EQ(*hub.integer_any({"num_local_experts", "num_experts"}), 128);
    const ModelConfig both = config(R"({"num_experts": 128, "num_local_experts": 64})");
    EXPECT_EQ(*both.integer_any({"num_local_experts", "num_experts"}), 64);

    const ModelConfig none = config(R"({"hidden_size": 64})");
    auto e = none.integer_any({"num_local_experts", "num_experts"});
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().kind, ErrorKind::missing);
    EXPECT_EQ(e.error().message, "config.json: none of the fields \"num_local_experts\", \"num_experts\" is present");

    const ModelConfig wrong = config(R"({"num_experts": "many"})");
    EXPECT_EQ(wrong.integer_any({"num_local_experts", "num_experts"}).error().message,
              "config.json: field \"num_experts\" must be an integer, found string");
}

TEST(JsonModelConfig, TopLevelMustBeAnObject) {
    auto c = ModelConfig::parse("[1, 2]", "/m/config.json");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().message, "/m/config.json: expected a JSON object at the top level, found array");
    auto bad = ModelConfig::parse("{", "/m/config.json");
    ASSERT_FALSE(bad);
    EXPECT_THAT(bad.error().message, HasSubstr("/m/config.json: invalid JSON"));
}

TEST(JsonErrorKind, Names) {
    EXPECT_STREQ(to_string(ErrorKind::missing), "missing");
    EXPECT_STREQ(to_string(ErrorKind::format), "format");
    EXPECT_STREQ(to_string(ErrorKind::invalid_argument), "invalid_argument");
    EXPECT_STREQ(to_string(ErrorKind::internal), "internal");
    EXPECT_STREQ(to_string(ErrorKind::peer_lost), "peer_lost");
    Error e = with_context(Error{ErrorKind::io, "x.bin: short read"}, "loading model");
    EXPECT_EQ(e.message, "loading model: x.bin: short read");
}

}  // namespace
}  // namespace stormo
