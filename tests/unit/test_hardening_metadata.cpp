// Metadata that parsed but said something impossible, refused where it is read and naming what is
// at fault: a NaN in GGUF float metadata (the config made from it would not parse, naming no
// key), a tokenizer.json key given twice (the reference's deserializer refuses it) and a
// tokenizer with ids the model has no embedding row for (caught at load, not when first used).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "cli_runner.hpp"
#include "oracle_support.hpp"

namespace fs = std::filesystem;

namespace {

using stormo::test::CommandResult;
using stormo::test::run_cli;
using stormo::test::TempDir;

const std::string kDemo = stormo::testing::demo_dir();

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void expect_error(const CommandResult& r, const std::string& needle) {
    EXPECT_NE(r.status, 0) << r.out;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

}  // namespace

TEST(HardeningMetadata, NonFiniteGgufFloatsAreRefusedByKey) {
    std::string bytes = read_bytes(std::string(STORMO_SOURCE_DIR) + "/tests/data/gguf/gpt_oss-f16.gguf");
    // The key's string, then its type (f32: 6) and value.
    const std::string key = "gpt-oss.rope.freq_base";
    const size_t at = bytes.find(key);
    ASSERT_NE(at, std::string::npos);
    uint32_t type = 0;
    std::memcpy(&type, bytes.data() + at + key.size(), sizeof type);
    ASSERT_EQ(type, 6u);
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        std::memcpy(bytes.data() + at + key.size() + 4, &bad, sizeof bad);
        TempDir dir;
        std::ofstream(dir.file("model.gguf"), std::ios::binary) << bytes;
        expect_error(run_cli("generate --ids 1,2 --max-tokens 1 --model " + dir.file("model.gguf")),
                     "key \"gpt-oss.rope.freq_base\" must be a finite number, found " + std::string(bad != bad ? "nan" : "inf"));
    }
}

TEST(HardeningMetadata, ATokenizerKeyGivenTwiceIsRefused) {
    std::string json = read_bytes(kDemo + "/tokenizer.json");
    ASSERT_EQ(json.front(), '{');
    json.insert(1, "\"decoder\": null, ");
    TempDir dir;
    std::ofstream(dir.file("tokenizer.json")) << json;
    expect_error(run_cli("tokenize --tokenizer " + dir.file("tokenizer.json") + " --text hi"),
                 "tokenizer.json: decoder: given twice at the top level");
}

TEST(HardeningMetadata, TokenizerIdsBeyondTheModelsVocabularyFailAtLoad) {
    TempDir dir;
    for (const char* file : {"model.safetensors", "config.json", "generation_config.json", "tokenizer_config.json",
                             "special_tokens_map.json"})
        fs::create_symlink(kDemo + "/" + file, dir.file(file));
    // The demo's 64 ids and one more, which its 64-row embedding lacks.
    std::string json = read_bytes(kDemo + "/tokenizer.json");
    const std::string list = "\"added_tokens\": [";
    const size_t at = json.find(list);
    ASSERT_NE(at, std::string::npos);
    json.insert(at + list.size(), "{\"id\": 64, \"content\": \"<|extra|>\", \"special\": true}, ");
    std::ofstream(dir.file("tokenizer.json")) << json;
    const std::string why = "token \"<|extra|>\" has id 64, beyond the model's vocabulary: the tokenizer has 65 ids, the model 64";
    expect_error(run_cli("run --model " + dir.path() + " --prompt hi --max-tokens 1"), why);
    // serve refuses at load too (it exits: no request could be answered safely).
    expect_error(run_cli("serve --port 0 --model " + dir.path()), why);
}
