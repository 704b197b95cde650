// stormo tokenize / detokenize through the binary: ids on one line, exact text back, --plain,
// --jsonl, --skip-special, and one-line errors naming what is wrong.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_runner.hpp"

namespace {

using stormo::test::run_cli;

const std::string kDemo = std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo";
const std::string kQwen = std::string(STORMO_TOKENIZER_DATA_DIR) + "/qwen3/tokenizer.json";

TEST(CliText, TokenizeAndDetokenizeTheDemoTokenizer) {
    auto r = run_cli("tokenize --tokenizer '" + kDemo + "' --text '123+456=<|end|>'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "1 2 3 40 4 5 6 45 48\n");
    r = run_cli("detokenize --tokenizer '" + kDemo + "' --ids 1,2,3,40,4,5,6,45,48");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "123+456=<|end|>");
    r = run_cli("detokenize --tokenizer '" + kDemo + "' --ids '5 7 9, 48' --skip-special");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "579");
}

TEST(CliText, PlainEncodesSpecialTokensAsText) {
    auto r = run_cli("tokenize --tokenizer '" + kQwen + "' --text '<|im_start|>hi'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "151644 6023\n");
    r = run_cli("tokenize --tokenizer '" + kQwen + "' --plain --text '<|im_start|>hi'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(' '), std::string::npos);
    EXPECT_EQ(r.out.find("151644"), std::string::npos) << r.out;
}

TEST(CliText, TextFileIsEncodedWhole) {
    stormo::test::TempDir dir;
    const std::string file = dir.file("prompt.txt");
    std::ofstream(file) << "rev:ab=\n";
    auto r = run_cli("tokenize --tokenizer '" + kDemo + "/tokenizer.json' --text-file '" + file + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "27 14 31 44 10 11 45 37\n");
    r = run_cli("tokenize --tokenizer '" + kDemo + "' --text-file '" + dir.path() + "'");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

TEST(CliText, JsonlGivesOneLinePerText) {
    stormo::test::TempDir dir;
    const std::string file = dir.file("texts.jsonl");
    std::ofstream(file) << "\"12+3=\"\n\"\"\n\"a\\nb<|end|>\"\n";
    auto r = run_cli("tokenize --tokenizer '" + kDemo + "' --jsonl '" + file + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "1 2 40 3 45\n\n10 37 11 48\n");
    std::ofstream(file) << "not json\n";
    r = run_cli("tokenize --tokenizer '" + kDemo + "' --jsonl '" + file + "'");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("line 1"), std::string::npos) << r.err;
}

TEST(CliText, ErrorsAreOneLineNamingTheCulprit) {
    auto r = run_cli("detokenize --tokenizer '" + kDemo + "' --ids 1,99999");
    EXPECT_EQ(r.status, 2);  // an id the tokenizer lacks is a wrong argument
    EXPECT_EQ(r.err.rfind("stormo: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("99999"), std::string::npos) << r.err;
    r = run_cli("tokenize --tokenizer /nonexistent/tokenizer.json --text hi");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("/nonexistent/tokenizer.json"), std::string::npos) << r.err;
    r = run_cli("tokenize --tokenizer '" + kDemo + "' --text-file /nonexistent.txt");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("/nonexistent.txt"), std::string::npos) << r.err;
    r = run_cli("tokenize --tokenizer '" + kDemo + "'");
    EXPECT_EQ(r.status, 2) << r.err;
    r = run_cli("detokenize --tokenizer '" + kDemo + "' --ids 1,x");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("\"x\""), std::string::npos) << r.err;
}

}  // namespace
