// `stormo run --json-schema FILE` and `--grammar FILE` through the real binary, on the gpt_oss
// fixture with a real byte-level tokenizer (tests/data/structured): random weights, so an answer
// that parses and matches its schema does so because of the token mask. Bad files exit 2 (a usage error) with one
// line naming the option, the file and the keyword's path or the grammar's line and column.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "cli_runner.hpp"
#include "jinja/chat_value.hpp"
#include "safetensors_writer.hpp"

namespace stormo::testing {
namespace {

using stormo::test::CommandResult;

CommandResult run_structured(const std::string& args) {
    return stormo::test::run_cli("run --model '" + std::string(STORMO_STRUCTURED_MODEL) + "' --prompt 'Describe a cat' " + args);
}

TEST(CliStructured, JsonSchemaAnswersParseAndMatch) {
    stormo::test::TempDir tmp;
    const std::string schema = tmp.file("cat.json");
    stormo::test::write_bytes(schema, std::string(R"({"type": "object", "additionalProperties": false,
        "properties": {"name": {"type": "string", "maxLength": 10}, "legs": {"type": "integer"},
                       "mood": {"enum": ["calm", "grumpy"]}, "toys": {"type": "array", "items": {"type": "boolean"}, "maxItems": 4}},
        "required": ["name", "legs", "mood", "toys"]})"));
    for (const std::string sampling : {"", "--temperature 1 --seed 4", "--temperature 0.8 --top-k 20 --seed 9"}) {
        const CommandResult r = run_structured("--json-schema " + schema + " --max-tokens 600 " + sampling);
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_EQ(r.err.find("token limit"), std::string::npos) << r.err;
        auto parsed = text::parse_json_value(r.out, "stdout");
        ASSERT_TRUE(parsed.has_value()) << r.out;
        ASSERT_TRUE(parsed->find("name") && parsed->find("name")->is_string()) << r.out;
        ASSERT_TRUE(parsed->find("legs") && parsed->find("legs")->is_int()) << r.out;
        const std::string mood = parsed->find("mood")->as_string();
        EXPECT_TRUE(mood == "calm" || mood == "grumpy") << r.out;
        EXPECT_LE(parsed->find("toys")->as_list().size(), 4u) << r.out;
    }
}

TEST(CliStructured, GrammarAnswersMatch) {
    stormo::test::TempDir tmp;
    const std::string grammar = tmp.file("g.gbnf");
    stormo::test::write_bytes(grammar, std::string("root ::= \"mood: \" mood\nmood ::= \"calm\" | \"grumpy\" | [a-z]{2,5} \"!\"\n"));
    const CommandResult r = run_structured("--grammar " + grammar + " --max-tokens 40 --temperature 1 --seed 2");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(std::regex_match(r.out, std::regex("mood: (calm|grumpy|[a-z]{2,5}!)\n"))) << r.out;
}

TEST(CliStructured, BadFilesAreRefusedBeforeTheModelLoads) {
    stormo::test::TempDir tmp;
    stormo::test::write_bytes(tmp.file("s.json"), std::string(R"({"type": "string", "pattern": "^a$"})"));
    CommandResult r = run_structured("--json-schema " + tmp.file("s.json"));
    EXPECT_EQ(r.status, 2);  // a usage error
    EXPECT_NE(r.err.find("--json-schema " + tmp.file("s.json") + ": $.pattern: the keyword 'pattern' is not supported"), std::string::npos) << r.err;
    stormo::test::write_bytes(tmp.file("g.gbnf"), std::string("root ::= \"a\" (\n"));
    r = run_structured("--grammar " + tmp.file("g.gbnf"));
    EXPECT_EQ(r.status, 2);  // a usage error
    EXPECT_NE(r.err.find("--grammar " + tmp.file("g.gbnf") + ": grammar line 2, column 1: expected ')'"), std::string::npos) << r.err;
    r = run_structured("--grammar " + tmp.file("g.gbnf") + " --json-schema " + tmp.file("s.json"));
    EXPECT_EQ(r.status, 2);  // a usage error
    EXPECT_NE(r.err.find("give one"), std::string::npos) << r.err;
    r = run_structured("--json-schema " + tmp.file("missing.json"));
    EXPECT_EQ(r.status, 2);  // a usage error
    EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stormo::testing
