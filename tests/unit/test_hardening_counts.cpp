// Counts read from config.json or GGUF metadata are checked against the tensors present before
// anything is sized by them. Each broken count runs under a 1.5 GB address-space cap, so a test
// fails (with std::bad_alloc) if the model allocates by the count before the check refuses it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using stormo::test::CommandResult;
using stormo::test::run_command;
using stormo::test::TempDir;

const std::string kModels = std::string(STORMO_SOURCE_DIR) + "/models/";
const std::string kGguf = std::string(STORMO_SOURCE_DIR) + "/tests/data/gguf/";

// `stormo generate` of two tokens with the address space capped (ulimit -v counts KiB).
CommandResult generate_capped(const std::string& model) {
    return run_command("sh -c \"ulimit -v 1500000; exec '" + std::string(STORMO_CLI) + "' generate --ids 1,2 --max-tokens 1 --model '" +
                       model + "'\"");
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// A demo model whose config.json has `field` set to `value`, its weights linked.
void write_config_variant(const TempDir& dir, const std::string& demo, const std::string& field, const std::string& value) {
    fs::create_symlink(kModels + demo + "/model.safetensors", dir.file("model.safetensors"));
    std::string config = read_bytes(kModels + demo + "/config.json");
    const std::string key = "\"" + field + "\": ";
    const size_t at = config.find(key);
    ASSERT_NE(at, std::string::npos) << demo << " " << field;
    const size_t end = config.find_first_of(",\n}", at + key.size());
    config.replace(at + key.size(), end - at - key.size(), value);
    std::ofstream(dir.file("config.json")) << config;
}

void expect_refused(const CommandResult& r, const std::string& needle, const std::string& what) {
    EXPECT_NE(r.status, 0) << what << ": " << r.out;
    EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << what << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << what << ": " << r.err;
}

}  // namespace

TEST(HardeningCounts, ConfigCountsMeetTheTensorsBeforeSizingAnything) {
    struct Case {
        const char* demo;
        const char* field;
        const char* needle;
    };
    const Case cases[] = {
        // head_dim sized the RoPE table (4 GB) before q_proj's shape was checked.
        {"gpt-oss-demo", "head_dim", "\"model.layers.0.self_attn.q_proj.weight\" has shape [128, 128], expected [4000000000, 128]"},
        {"qwen3-moe-demo", "head_dim", "\"model.layers.0.self_attn.q_proj.weight\" has shape [128, 128], expected [4000000000, 128]"},
        // num_hidden_layers sized the per-layer plans before any layer's tensors were looked at.
        {"qwen3-moe-demo", "num_hidden_layers",
         "field \"num_hidden_layers\" is 1000000000, but the checkpoint has no tensor \"model.layers.999999999.input_layernorm.weight\""},
        {"gpt-oss-demo", "num_hidden_layers", "field \"layer_types\" has 4 entries, num_hidden_layers is 1000000000"},
        {"glm-moe-dsa-demo", "num_hidden_layers", "field \"mlp_layer_types\" has 4 entries for 1000000000 layers"},
        {"gpt-oss-demo", "hidden_size", "\"model.embed_tokens.weight\" has shape [64, 128], expected [64, 1000000000]"},
        {"gpt-oss-demo", "vocab_size", "\"model.embed_tokens.weight\" has shape [64, 128], expected [1000000000, 128]"},
        {"gpt-oss-demo", "num_attention_heads", "\"model.layers.0.self_attn.q_proj.weight\" has shape [128, 128]"},
        {"gpt-oss-demo", "intermediate_size", "\"model.layers.0.mlp.experts.gate_up_proj\" has shape [8, 128, 256]"},
        {"gpt-oss-demo", "num_local_experts", "\"model.layers.0.mlp.router.weight\" has shape [8, 128], expected [1000000000, 128]"},
        {"qwen3-moe-demo", "moe_intermediate_size", "\"model.layers.0.mlp.experts.0.gate_proj.weight\" has shape [128, 128]"},
        {"qwen3-moe-demo", "num_local_experts", "\"model.layers.0.mlp.gate.weight\" has shape [8, 128], expected [1000000000, 128]"},
        {"glm-moe-dsa-demo", "n_routed_experts", "\"model.layers.1.mlp.gate.weight\" has shape [8, 128], expected [1000000000, 128]"},
        {"glm-moe-dsa-demo", "intermediate_size", "\"model.layers.0.mlp.gate_proj.weight\" has shape [256, 128]"},
    };
    for (const Case& c : cases) {
        TempDir dir;
        write_config_variant(dir, c.demo, c.field, "1000000000");
        expect_refused(generate_capped(dir.path()), c.needle, std::string(c.demo) + " " + c.field);
    }
}

TEST(HardeningCounts, TheCapLeavesTheDemosRunning) {
    // The cap would refuse nothing if the demos could not run under it either.
    for (const char* demo : {"gpt-oss-demo", "qwen3-moe-demo", "glm-moe-dsa-demo"}) {
        const CommandResult r = generate_capped(kModels + demo);
        EXPECT_EQ(r.status, 0) << demo << ": " << r.err;
    }
}

TEST(HardeningCounts, GgufBlockCountMustHaveItsLastBlock) {
    for (const std::string name : {"gpt_oss-f16.gguf", "qwen3_moe-f16.gguf", "glm_moe_dsa-f16.gguf"}) {
        std::string bytes = read_bytes(kGguf + name);
        // The key's string, then its type (u32: 4) and value: a count of 10^9 blocks.
        const size_t key = bytes.find(".block_count");
        ASSERT_NE(key, std::string::npos) << name;
        const size_t type_at = key + std::strlen(".block_count");
        uint32_t type = 0;
        std::memcpy(&type, bytes.data() + type_at, sizeof type);
        ASSERT_EQ(type, 4u) << name;
        const uint32_t blocks = 1000000000;
        std::memcpy(bytes.data() + type_at + 4, &blocks, sizeof blocks);
        TempDir dir;
        std::ofstream(dir.file(name), std::ios::binary) << bytes;
        expect_refused(generate_capped(dir.file(name)), ".block_count\" is 1000000000, but the file has no tensor \"blk.999999999.attn_norm.weight\"",
                       name);
    }
}

// A config.json counting less than its checkpoint holds ran the model on part of its weights and
// answered with exit 0 (one layer fewer: other tokens; the shared experts turned off: logits moved
// by up to 12). Every tensor of the checkpoint must be one the model uses.
TEST(HardeningCounts, TensorsTheConfigLeavesOutAreRefused) {
    struct Case {
        const char* demo;
        const char* field;
        const char* value;
        const char* named;
    };
    const Case cases[] = {
        {"qwen3-moe-demo", "num_hidden_layers", "3", "\"model.layers.3."},
        {"deepseek-v3-demo", "n_shared_experts", "0", ".mlp.shared_experts."},
        {"glm-moe-dsa-demo", "n_shared_experts", "0", ".mlp.shared_experts."},
    };
    for (const Case& c : cases) {
        TempDir dir;
        write_config_variant(dir, c.demo, c.field, c.value);
        const CommandResult r = generate_capped(dir.path());
        expect_refused(r, "tensors are not part of the model config.json describes", std::string(c.demo) + " " + c.field);
        EXPECT_NE(r.err.find(c.named), std::string::npos) << c.demo << ": " << r.err;
        // inspect counted such a checkpoint without a word; convert wrote the rest as experts
        // no list names.
        const std::string cli = "'" + std::string(STORMO_CLI) + "' ";
        expect_refused(run_command(cli + "inspect '" + dir.path() + "'"), "tensors are not part of the model", c.demo);
        expect_refused(run_command(cli + "convert --model '" + dir.path() + "' --out '" + dir.file("container") + "'"),
                       "tensors are not part of the model", c.demo);
        EXPECT_FALSE(fs::exists(dir.file("container"))) << c.demo;
    }
}

// The same in a GGUF file: a block count one below the blocks it holds.
TEST(HardeningCounts, GgufTensorsPastTheBlockCountAreRefused) {
    for (const std::string name : {"gpt_oss-f16.gguf", "qwen3_moe-f16.gguf", "glm_moe_dsa-f16.gguf"}) {
        std::string bytes = read_bytes(kGguf + name);
        const size_t key = bytes.find(".block_count");
        ASSERT_NE(key, std::string::npos) << name;
        const size_t value_at = key + std::strlen(".block_count") + 4;
        uint32_t blocks = 0;
        std::memcpy(&blocks, bytes.data() + value_at, sizeof blocks);
        ASSERT_GT(blocks, 1u) << name;
        const uint32_t fewer = blocks - 1;
        std::memcpy(bytes.data() + value_at, &fewer, sizeof fewer);
        TempDir dir;
        std::ofstream(dir.file(name), std::ios::binary) << bytes;
        const CommandResult r = generate_capped(dir.file(name));
        expect_refused(r, "tensors are not part of the", name);
        EXPECT_NE(r.err.find("\"blk." + std::to_string(fewer) + "."), std::string::npos) << name << ": " << r.err;
    }
}

// transformers applies ACT2FN[hidden_act] in these families' MLPs and experts; stormo computes SiLU
// only, and another activation was ignored: the same logits bits, exit 0.
TEST(HardeningCounts, AnActivationOtherThanSiluIsRefused) {
    for (const char* demo : {"qwen3-moe-demo", "glm-moe-dsa-demo", "deepseek-v3-demo"}) {
        TempDir dir;
        write_config_variant(dir, demo, "hidden_act", "\"gelu\"");
        expect_refused(generate_capped(dir.path()), "field \"hidden_act\" is \"gelu\": only \"silu\" (SwiGLU) is supported", demo);
    }
}
