// config.json values checked against each other and against the run, each error naming the field
// or option at fault: expert counts beyond any model, stop ids outside the vocabulary, a context
// beyond the model's positions (blamed on the context, not the expert budget), and `inspect`
// refusing the expert budgets `generate` refuses, describing them the same way.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using stormo::test::CommandResult;
using stormo::test::run_cli;
using stormo::test::TempDir;

const std::string kDemo = std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo";

std::string demo_config() {
    std::ifstream in(kDemo + "/config.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// The demo's weights with config.json's `field` set to `value` (and generation_config.json when given).
void write_variant(const TempDir& dir, const std::string& field, const std::string& value,
                   const std::string& generation_config = "") {
    fs::create_symlink(kDemo + "/model.safetensors", dir.file("model.safetensors"));
    std::string config = demo_config();
    const std::string key = "\"" + field + "\": ";
    const size_t at = config.find(key);
    ASSERT_NE(at, std::string::npos) << field;
    const size_t end = config.find_first_of(",\n}", at + key.size());
    config.replace(at + key.size(), end - at - key.size(), value);
    std::ofstream(dir.file("config.json")) << config;
    if (!generation_config.empty()) std::ofstream(dir.file("generation_config.json")) << generation_config;
}

void expect_error(const CommandResult& r, const std::string& needle) {
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

}  // namespace

TEST(HardeningConfig, ExpertCountsBeyondAnyModelAreRefused) {
    TempDir huge;
    write_variant(huge, "num_local_experts", "1000000000000");
    expect_error(run_cli("inspect --model " + huge.path()),
                 "field \"num_local_experts\" must be at most 2147483647, found 1000000000000");
    TempDir wrong;
    write_variant(wrong, "num_local_experts", "1000000000");
    expect_error(run_cli("inspect --model " + wrong.path()), "the expert count does not match the tensors");
}

TEST(HardeningConfig, StopIdsMustBeInTheVocabulary) {
    for (const char* eos : {"-5", "64", "[1, 1000]"}) {
        TempDir dir;
        write_variant(dir, "eos_token_id", eos);
        fs::remove(dir.file("generation_config.json"));
        expect_error(run_cli("generate --model " + dir.path() + " --ids 1,2"), "config.json: field \"eos_token_id\" holds");
        expect_error(run_cli("inspect --model " + dir.path()), "outside the vocabulary [0, 64)");
    }
    TempDir gen;
    write_variant(gen, "vocab_size", "64", "{\"eos_token_id\": -5}");
    expect_error(run_cli("generate --model " + gen.path() + " --ids 1,2"),
                 "generation_config.json: field \"eos_token_id\" holds -5, outside the vocabulary [0, 64)");
}

// run, chat and serve read the stop ids without the vocabulary's bound: an eos_token_id of 999
// never ended an answer (exit 0), and -1 was refused against a bound of 2147483647.
TEST(HardeningConfig, RunRefusesStopIdsOutsideTheVocabularyToo) {
    for (const std::string eos : {"999", "-1"}) {
        TempDir dir;
        write_variant(dir, "eos_token_id", eos);
        for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
            fs::create_symlink(kDemo + "/" + f, dir.file(f));
        expect_error(run_cli("run --model " + dir.path() + " 12+34= --max-tokens 4"),
                     "config.json: field \"eos_token_id\" holds " + eos + ", outside the vocabulary [0, 64)");
    }
}

// A count of positions that is none: refused naming the file and the field, before any context is.
TEST(HardeningConfig, MaxPositionEmbeddingsMustBePositive) {
    TempDir dir;
    write_variant(dir, "max_position_embeddings", "0");
    expect_error(run_cli("generate --model " + dir.path() + " --ids 1,2"),
                 "config.json: field \"max_position_embeddings\" holds 0, not a number of positions");
}

TEST(HardeningConfig, AHugeContextIsBlamedOnTheContext) {
    const std::string want = "--context 1000000000: more positions than the model's max_position_embeddings (131072";
    expect_error(run_cli("generate --model " + kDemo + " --ids 1,2 --context 1000000000"), want);
    expect_error(run_cli("inspect --model " + kDemo + " --context 1000000000"), want);
    // Beyond any model: refused before the model is even read.
    expect_error(run_cli("generate --model " + kDemo + " --ids 1,2 --context 1000000000000"),
                 "--context 1000000000000: more than the 4294967296 positions stormo accepts");
    TempDir dir;
    std::ofstream(dir.file("c.yaml")) << "context: 200000\n";
    expect_error(run_cli("inspect --model " + kDemo + " --config " + dir.file("c.yaml")), "context in " + dir.file("c.yaml") + " 200000");
}

TEST(HardeningConfig, InspectRefusesTheBudgetsGenerateRefusesAndDescribesThemAlike) {
    const std::string minimum = "--expert-budget: expert budget of 100.00 KiB is below the minimum of 232.00 KiB";
    expect_error(run_cli("inspect --model " + kDemo + " --expert-budget 100KiB"), minimum);
    expect_error(run_cli("generate --model " + kDemo + " --ids 1,2 --expert-budget 100KiB"), minimum);
    const CommandResult inspect = run_cli("inspect --model " + kDemo + " --expert-budget 1MiB");
    ASSERT_EQ(inspect.status, 0) << inspect.err;
    EXPECT_NE(inspect.out.find("budget                1.00 MiB (asked); about 8 slots of 116.00 KiB"), std::string::npos)
        << inspect.out;
    const CommandResult generate = run_cli("generate --model " + kDemo + " --ids 1,2 --max-tokens 1 --verbose --expert-budget 1MiB");
    ASSERT_EQ(generate.status, 0) << generate.err;
    EXPECT_NE(generate.err.find("expert budget 1.00 MiB (asked); 8 slots of 116.00 KiB"), std::string::npos) << generate.err;
}

TEST(HardeningConfig, StopIdsMustBeIntegersInEitherFile) {
    // config.json's list is refused even where generation_config.json's takes precedence.
    TempDir config;
    write_variant(config, "eos_token_id", "[48, \"x\"]", "{\"eos_token_id\": 48}");
    expect_error(run_cli("generate --model " + config.path() + " --ids 1,2"),
                 "config.json: field \"eos_token_id\" item 1 must be an integer, found string");
    TempDir gen;
    write_variant(gen, "eos_token_id", "48", "{\"eos_token_id\": [48, \"x\"]}");
    expect_error(run_cli("generate --model " + gen.path() + " --ids 1,2"),
                 "generation_config.json: field \"eos_token_id\" item 1 must be an integer, found string");
}
