// The stormo binary as users and scripts drive it: --help everywhere, `plugins` and `inspect`
// (text and JSON) checked against the fixtures' own config.json and safetensors headers, the
// engine configuration and its overrides, one-line errors, and a plugin built out of tree
// against an installed stormo.
#include <gtest/gtest.h>

#include "cli_runner.hpp"
#include "kernel_test_support.hpp"
#include "toy_gguf_file.hpp"
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "stormo/abi.hpp"
#include "stormo/cpu_features.hpp"
#include "stormo/json.hpp"
#include "stormo/version.hpp"

namespace fs = std::filesystem;

namespace {

const std::string kCli = STORMO_CLI;
const std::string kFixtures = std::string(STORMO_TEST_DATA_DIR) + "/fixtures";
const std::string kBuildPlugins = STORMO_BUILD_PLUGIN_DIR;
const std::string kTestPlugins = STORMO_TEST_PLUGIN_DIR;

using ScratchDir = stormo::test::TempDir;

std::string quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

using stormo::test::slurp;
std::string read_file(const std::string& path) { return slurp(path); }

using CliResult = stormo::test::CommandResult;
using stormo::test::run_command;
CliResult run_shell(const std::string& command) { return run_command(command); }

CliResult run_stormo(const std::string& args) { return run_shell(quote(kCli) + " " + args); }

stormo::Json parse_json(const std::string& text) {
    auto j = stormo::Json::parse(text, "stdout");
    EXPECT_TRUE(j) << (j ? "" : j.error().message) << "\n" << text;
    return j ? *j : stormo::Json{};
}

const stormo::Json* entry_named(const stormo::Json& array, const std::string& name) {
    const auto* items = array.as_array();
    if (items == nullptr) return nullptr;
    for (const stormo::Json& item : *items) {
        const stormo::Json* n = item.find("name");
        if (n != nullptr && n->as_string() == name) return &item;
    }
    return nullptr;
}

bool flag(const stormo::Json& object, const char* key) {
    const stormo::Json* v = object.find(key);
    EXPECT_NE(v, nullptr) << key;
    return v != nullptr && v->as_bool().value_or(false);
}

int64_t integer(const stormo::Json& object, const char* key) {
    const stormo::Json* v = object.find(key);
    EXPECT_NE(v, nullptr) << key;
    return v != nullptr ? v->as_int().value_or(-1) : -1;
}

std::string string_of(const stormo::Json& object, const char* key) {
    const stormo::Json* v = object.find(key);
    EXPECT_NE(v, nullptr) << key;
    return v != nullptr ? v->as_string().value_or("") : "";
}

bool has_plugin_file(const char* file) { return fs::exists(fs::path(kBuildPlugins) / file); }

// A failure is one line on stderr starting "stormo: ", naming what is at fault; nothing on stdout.
void expect_one_line_error(const CliResult& r, const std::string& names, const std::string& what) {
    EXPECT_NE(r.status, 0) << what;
    EXPECT_TRUE(r.out.empty()) << what << ": stdout: " << r.out;
    ASSERT_FALSE(r.err.empty()) << what;
    EXPECT_EQ(r.err.rfind("stormo: ", 0), 0u) << what << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": more than one line: " << r.err;
    EXPECT_NE(r.err.find(names), std::string::npos) << what << ": does not name '" << names << "': " << r.err;
}

// ---- the fixtures' own facts, read independently of stormo's model code ----

struct TensorFact {
    std::string name;
    std::string dtype;
    uint64_t bytes = 0;
};

std::vector<TensorFact> safetensors_tensors(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), sizeof n);
    std::string header(n, '\0');
    in.read(header.data(), static_cast<std::streamsize>(n));
    const stormo::Json h = parse_json(header);
    std::vector<TensorFact> out;
    for (const auto& [name, t] : *h.as_object()) {
        if (name == "__metadata__") continue;
        const auto* offsets = t.find("data_offsets")->as_array();
        out.push_back({name, *t.find("dtype")->as_string(),
                       static_cast<uint64_t>(*(*offsets)[1].as_int() - *(*offsets)[0].as_int())});
    }
    return out;
}

// The role each tensor of the three families' checkpoints plays, stated here by name pattern.
std::string expected_role(const std::string& n) {
    auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
    const std::string module = n.substr(0, n.rfind('.'));
    const std::string leaf = module.substr(module.rfind('.') + 1);
    if (n.rfind("model.embed_tokens.", 0) == 0) return "embedding";
    if (n.rfind("lm_head.", 0) == 0) return "head";
    if (has(".mlp.experts.")) return "experts";
    if (has(".mlp.router.") || has(".mlp.gate.")) return "router";
    if (leaf.size() >= 4 && leaf.compare(leaf.size() - 4, 4, "norm") == 0) return "norm";
    if (has(".self_attn.")) return "attention";
    if (has(".mlp.")) return "dense_ffn";
    return "other";
}

struct FamilyCase {
    const char* fixture_prefix;
    const char* family;
    const char* experts_key;
};

// Runs inspect --json on every fixture of a family and compares it with config.json and the
// safetensors header.
void check_inspect_fixtures(const FamilyCase& fc) {
    int checked = 0;
    for (const auto& entry : fs::directory_iterator(kFixtures)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(fc.fixture_prefix, 0) != 0 || !fs::exists(entry.path() / "config.json")) continue;
        SCOPED_TRACE(name);
        ++checked;
        const CliResult r = run_stormo("inspect --json --model " + quote(entry.path().string()));
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_TRUE(r.err.empty()) << r.err;
        const stormo::Json j = parse_json(r.out);
        const stormo::Json config = parse_json(read_file((entry.path() / "config.json").string()));

        EXPECT_EQ(string_of(j, "family"), fc.family);
        EXPECT_EQ(integer(j, "family_score"), 100);
        // Every dimension named like a config.json field has that field's value.
        const stormo::Json* dims = j.find("dimensions");
        ASSERT_NE(dims, nullptr);
        ASSERT_NE(dims->as_object(), nullptr);
        int matched = 0;
        for (const auto& [key, value] : *dims->as_object()) {
            const stormo::Json* c = config.find(key);
            if (c == nullptr || !c->as_int()) continue;
            EXPECT_EQ(value.as_int(), c->as_int()) << key;
            ++matched;
        }
        EXPECT_GE(matched, 8);
        for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                                "vocab_size", "num_experts_per_tok", fc.experts_key}) {
            ASSERT_NE(dims->find(key), nullptr) << key << " missing from the dimensions";
            EXPECT_EQ(dims->find(key)->as_int(), config.find(key)->as_int()) << key;
        }
        EXPECT_EQ(integer(j, "n_layers"), *config.find("num_hidden_layers")->as_int());
        EXPECT_EQ(integer(j, "hidden_size"), *config.find("hidden_size")->as_int());
        EXPECT_EQ(integer(j, "vocab_size"), *config.find("vocab_size")->as_int());
        EXPECT_EQ(integer(j, "n_experts"), *config.find(fc.experts_key)->as_int());
        EXPECT_EQ(integer(j, "top_k"), *config.find("num_experts_per_tok")->as_int());

        // KV floats per token, from the family's attention layout.
        const int64_t layers = *config.find("num_hidden_layers")->as_int();
        int64_t kv = 0;
        if (std::string(fc.family) == "glm_dsa")
            kv = layers * (*config.find("kv_lora_rank")->as_int() + *config.find("qk_rope_head_dim")->as_int() +
                           *config.find("index_head_dim")->as_int());
        else if (std::string(fc.family) == "deepseek_v3")
            kv = layers * (*config.find("kv_lora_rank")->as_int() + *config.find("qk_rope_head_dim")->as_int());
        else
            kv = layers * 2 * *config.find("num_key_value_heads")->as_int() * *config.find("head_dim")->as_int();
        EXPECT_EQ(integer(j, "kv_floats_per_token"), kv);
        int64_t moe_layers = layers;
        if (const stormo::Json* types = config.find("mlp_layer_types"); types != nullptr) {
            moe_layers = 0;
            for (const stormo::Json& t : *types->as_array()) moe_layers += t.as_string() == "sparse";
        } else if (const stormo::Json* dense = config.find("first_k_dense_replace"); dense != nullptr) {
            moe_layers = layers - *dense->as_int();
        }
        EXPECT_EQ(integer(j, "n_moe_layers"), moe_layers);

        // The census against the safetensors header.
        const std::vector<TensorFact> tensors = safetensors_tensors((entry.path() / "model.safetensors").string());
        std::map<std::string, std::pair<int64_t, int64_t>> roles, dtypes;
        int64_t total = 0;
        for (const TensorFact& t : tensors) {
            auto& r1 = roles[expected_role(t.name)];
            ++r1.first;
            r1.second += static_cast<int64_t>(t.bytes);
            auto& d = dtypes[t.dtype];
            ++d.first;
            d.second += static_cast<int64_t>(t.bytes);
            total += static_cast<int64_t>(t.bytes);
        }
        const stormo::Json* census = j.find("tensors");
        ASSERT_NE(census, nullptr);
        EXPECT_EQ(integer(*census, "count"), static_cast<int64_t>(tensors.size()));
        EXPECT_EQ(integer(*census, "bytes"), total);
        for (const char* role : {"embedding", "attention", "norm", "router", "experts", "dense_ffn", "head", "other"}) {
            const stormo::Json* got = census->find("by_role")->find(role);
            ASSERT_NE(got, nullptr) << role;
            EXPECT_EQ(integer(*got, "count"), roles[role].first) << role;
            EXPECT_EQ(integer(*got, "bytes"), roles[role].second) << role;
        }
        for (const auto& [dtype, tally] : dtypes) {
            const stormo::Json* got = census->find("by_dtype")->find(dtype);
            ASSERT_NE(got, nullptr) << dtype;
            EXPECT_EQ(integer(*got, "bytes"), tally.second) << dtype;
        }
        EXPECT_GT(roles["experts"].second, 0);
        EXPECT_EQ(integer(*census, "expert_bytes"), roles["experts"].second);
        EXPECT_EQ(integer(*census, "dense_bytes"), total - roles["experts"].second);

        const stormo::Json* plan = j.find("memory_plan");
        ASSERT_NE(plan, nullptr);
        EXPECT_EQ(integer(*plan, "dense_resident_bytes"), total - roles["experts"].second);
        EXPECT_EQ(integer(*plan, "expert_bytes"), roles["experts"].second);
        EXPECT_EQ(integer(*plan, "expert_budget_bytes"), roles["experts"].second);  // all resident by default
        EXPECT_TRUE(flag(*plan, "all_experts_resident"));
        EXPECT_EQ(integer(*plan, "kv_bytes_per_token"), kv * 4);
        EXPECT_EQ(integer(*plan, "context"), 4096);
        // A sliding layer keeps a ring of its window plus a forward block (256 positions), not the
        // context (Session::rows_for).
        int64_t kv_rows = 0;  // over all layers, each row of kv / layers floats
        const stormo::Json* types = config.find("layer_types");
        for (int64_t l = 0; l < layers; ++l) {
            const bool sliding =
                types != nullptr && (*types->as_array())[static_cast<size_t>(l)].as_string() == "sliding_attention";
            kv_rows += sliding ? std::min<int64_t>(4096, *config.find("sliding_window")->as_int() + 255) : 4096;
        }
        EXPECT_EQ(integer(*plan, "kv_bytes_for_context"), kv / layers * 4 * kv_rows);
    }
    EXPECT_GE(checked, 2) << "no " << fc.fixture_prefix << " fixtures found";
}

}  // namespace

TEST(Cli, HelpAndVersion) {
    const CliResult help = run_stormo("--help");
    EXPECT_EQ(help.status, 0);
    for (const char* command : {"plugins", "inspect", "generate", "logits", "STORMO_PLUGIN_PATH"})
        EXPECT_NE(help.out.find(command), std::string::npos) << command;
    const CliResult version = run_stormo("--version");
    EXPECT_EQ(version.status, 0);
    EXPECT_NE(version.out.find(stormo::kStormoAbi), std::string::npos) << version.out;
}

TEST(Cli, EverySubcommandDocumentsItsOptions) {
    for (const char* command : {"plugins", "inspect"}) {
        const CliResult r = run_stormo(std::string(command) + " --help");
        EXPECT_EQ(r.status, 0) << command;
        EXPECT_TRUE(r.err.empty()) << r.err;
        EXPECT_NE(r.out.find(std::string("usage: stormo ") + command), std::string::npos) << r.out;
        for (const char* option : {"--model", "--config", "--kernels", "--family", "--expert-budget", "--threads",
                                   "--context", "--plugins-dir", "--json", "--help"})
            EXPECT_NE(r.out.find(option), std::string::npos) << command << " --help lacks " << option;
    }
}

TEST(Cli, PluginsJsonListsEveryPlugin) {
    const CliResult r = run_stormo("plugins --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const stormo::Json list = parse_json(r.out);
    ASSERT_NE(list.as_array(), nullptr);
    for (const stormo::Json& item : *list.as_array())
        for (const char* key : {"name", "kind", "version", "usable", "selected", "score", "path"})
            EXPECT_NE(item.find(key), nullptr) << key;

    std::vector<std::string> expected{"avx2", "vnni", "qwen3_moe", "glm_dsa", "reference"};
    if (has_plugin_file("libstormo-model-gpt_oss.so")) expected.push_back("gpt_oss");
    for (const std::string& name : expected) {
        const stormo::Json* p = entry_named(list, name);
        ASSERT_NE(p, nullptr) << name << " not listed";
        EXPECT_FALSE(flag(*p, "rejected")) << name;
    }
    const stormo::CpuFeatureSet cpu = stormo::detect_cpu_features();
    const bool has_vnni = stormo::testing::kernels_unusable_reason("vnni").empty();
    const bool has_avx2 = cpu.has(stormo::CpuFeature::avx2) && cpu.has(stormo::CpuFeature::fma) &&
                          cpu.has(stormo::CpuFeature::f16c);
    const stormo::Json& vnni = *entry_named(list, "vnni");
    EXPECT_EQ(flag(vnni, "usable"), has_vnni);
    EXPECT_EQ(string_of(vnni, "kind"), "kernels");
    if (!has_vnni) {
        const auto* missing = vnni.find("missing_features")->as_array();
        ASSERT_NE(missing, nullptr);
        bool names_vnni = false;
        for (const stormo::Json& f : *missing) names_vnni |= f.as_string()->find("vnni") != std::string::npos;
        EXPECT_TRUE(names_vnni);
    }
    EXPECT_EQ(flag(*entry_named(list, "avx2"), "usable"), has_avx2);
    const std::string best = has_vnni ? "vnni" : has_avx2 ? "avx2" : "reference";
    int selected_kernels = 0;
    for (const stormo::Json& item : *list.as_array()) {
        if (string_of(item, "kind") == "kernels" && flag(item, "selected")) {
            ++selected_kernels;
            EXPECT_EQ(string_of(item, "name"), best);
        }
        if (string_of(item, "kind") == "model") {
            EXPECT_FALSE(flag(item, "selected"));  // no --model
        }
    }
    EXPECT_EQ(selected_kernels, 1);
    const stormo::Json& reference = *entry_named(list, "reference");
    EXPECT_TRUE(flag(reference, "usable"));
    EXPECT_EQ(string_of(reference, "kind"), "kernels");
    const stormo::Json& qwen = *entry_named(list, "qwen3_moe");
    EXPECT_EQ(string_of(qwen, "kind"), "model");
    EXPECT_NE(qwen.find("accepts"), nullptr);
}

TEST(Cli, PluginsTableShowsRefusedLibrariesWithReasons) {
    const CliResult r = run_stormo("plugins --plugins-dir " + quote(kTestPlugins + "/junk") + " --plugins-dir " +
                               quote(kTestPlugins + "/wrong_abi"));
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* name : {"NAME", "avx2", "vnni", "reference", "qwen3_moe", "glm_dsa", "rejected:",
                             "libstormo-kernels-junk.so: cannot load the library", "built for ABI stormo-sdk-0"})
        EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
    const CliResult j = run_stormo("plugins --json --plugins-dir " + quote(kTestPlugins + "/junk"));
    ASSERT_EQ(j.status, 0) << j.err;
    const stormo::Json list = parse_json(j.out);
    const stormo::Json* junk = entry_named(list, "junk");
    ASSERT_NE(junk, nullptr);
    EXPECT_TRUE(flag(*junk, "rejected"));
    EXPECT_FALSE(flag(*junk, "usable"));
    EXPECT_NE(string_of(*junk, "reason").find("cannot load the library"), std::string::npos);
}

TEST(Cli, PluginsWithModelSelectsTheFamily) {
    const CliResult r = run_stormo("plugins --json --model " + quote(kFixtures + "/qwen3_moe"));
    ASSERT_EQ(r.status, 0) << r.err;
    const stormo::Json list = parse_json(r.out);
    const stormo::Json* qwen = entry_named(list, "qwen3_moe");
    const stormo::Json* glm = entry_named(list, "glm_dsa");
    ASSERT_TRUE(qwen && glm);
    EXPECT_TRUE(flag(*qwen, "selected"));
    EXPECT_EQ(integer(*qwen, "score"), 100);
    EXPECT_FALSE(flag(*glm, "selected"));
    EXPECT_EQ(integer(*glm, "score"), 0);
    EXPECT_FALSE(flag(*glm, "usable"));
}

TEST(Cli, InspectQwen3MoeFixtures) { check_inspect_fixtures({"qwen3_moe", "qwen3_moe", "num_local_experts"}); }

TEST(Cli, InspectGlmMoeDsaFixtures) { check_inspect_fixtures({"glm_moe_dsa", "glm_dsa", "n_routed_experts"}); }

TEST(Cli, InspectDeepseekV3Fixtures) { check_inspect_fixtures({"deepseek_v3", "deepseek_v3", "n_routed_experts"}); }

TEST(Cli, InspectGptOssFixtures) {
    if (!has_plugin_file("libstormo-model-gpt_oss.so")) GTEST_SKIP() << "the gpt_oss plugin is not built";
    check_inspect_fixtures({"gpt_oss", "gpt_oss", "num_local_experts"});
}

TEST(Cli, InspectTextShowsEverySection) {
    const CliResult r = run_stormo("inspect --model " + quote(kFixtures + "/qwen3_moe"));
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* text : {"family   qwen3_moe (score 100)", "kernels  ", "dimensions (config.json)",
                             "hidden_size", "num_local_experts", "moe layers               3 of 3", "by role",
                             "experts     72     294912 bytes", "by dtype", "memory plan", "dense resident",
                             "KV per token          1536 bytes", "kernel table", "matmul BF16 out_in"})
        EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
}

TEST(Cli, InspectExpertBudgetContextAndForcedKernels) {
    const CliResult r = run_stormo("inspect --json --model " + quote(kFixtures + "/qwen3_moe") +
                               " --expert-budget 48KiB --context 100 --kernels reference --threads 3");
    ASSERT_EQ(r.status, 0) << r.err;
    const stormo::Json j = parse_json(r.out);
    EXPECT_EQ(string_of(j, "kernels"), "reference");
    EXPECT_TRUE(flag(j, "kernels_forced"));
    EXPECT_EQ(integer(j, "threads"), 3);
    const stormo::Json& plan = *j.find("memory_plan");
    EXPECT_EQ(integer(plan, "expert_budget_bytes"), 48 * 1024);  // the smallest the store takes: 2 slots
    EXPECT_FALSE(flag(plan, "all_experts_resident"));
    EXPECT_EQ(integer(plan, "context"), 100);
    EXPECT_EQ(integer(plan, "kv_bytes_for_context"), integer(plan, "kv_bytes_per_token") * 100);
    for (const stormo::Json& e : *j.find("kernel_table")->as_array()) {
        const std::string provider = string_of(e, "provider");
        EXPECT_TRUE(provider == "reference" || provider == "none") << string_of(e, "operation") << ": " << provider;
    }
}

TEST(Cli, ConfigFileThenCommandLine) {
    ScratchDir tmp;
    const std::string yaml = tmp.file("engine.yaml");
    std::ofstream(yaml) << "kernels: reference\ncontext: 64\nfamily: glm_dsa\n";
    const std::string model = quote(kFixtures + "/qwen3_moe");
    const CliResult from_file = run_stormo("inspect --json --model " + model + " --config " + quote(yaml) + " --family auto");
    ASSERT_EQ(from_file.status, 0) << from_file.err;
    const stormo::Json a = parse_json(from_file.out);
    EXPECT_EQ(string_of(a, "kernels"), "reference");
    EXPECT_EQ(string_of(a, "family"), "qwen3_moe");  // --family auto overrides the file's glm_dsa
    EXPECT_EQ(integer(*a.find("memory_plan"), "context"), 64);

    const CliResult overridden = run_stormo("inspect --json --model " + model + " --config " + quote(yaml) +
                                            " --kernels auto --context 32 --family qwen3_moe");
    ASSERT_EQ(overridden.status, 0) << overridden.err;
    const stormo::Json b = parse_json(overridden.out);
    EXPECT_FALSE(flag(b, "kernels_forced"));
    EXPECT_EQ(integer(*b.find("memory_plan"), "context"), 32);
    EXPECT_EQ(string_of(b, "family"), "qwen3_moe");
    EXPECT_TRUE(flag(b, "family_forced"));

    // Without --family the file's family: glm_dsa is forced on a Qwen3 config, and its
    // summary fails on the first MLA field the config lacks.
    expect_one_line_error(run_stormo("inspect --model " + model + " --config " + quote(yaml)), "glm_dsa",
                          "family forced by the file");
    expect_one_line_error(run_stormo("inspect --model " + model + " --config " + quote(yaml)), "kv_lora_rank",
                          "family forced by the file names the missing field");

    std::ofstream(tmp.file("bad.yaml")) << "kernal: avx2\n";
    expect_one_line_error(run_stormo("inspect --model " + model + " --config " + quote(tmp.file("bad.yaml"))),
                          "unknown key 'kernal'", "unknown YAML key");
}

TEST(Cli, FailuresAreOneLineOnStderr) {
    const std::string model = quote(kFixtures + "/qwen3_moe");
    expect_one_line_error(run_stormo("inspect"), "--model", "missing --model");
    expect_one_line_error(run_stormo("inspect --model /nonexistent/stormo-model"), "/nonexistent/stormo-model",
                          "nonexistent model directory");
    expect_one_line_error(run_stormo("inspect --model " + model + " --kernels sse9"), "--kernels sse9",
                          "unknown kernels");
    expect_one_line_error(run_stormo("inspect --model " + model + " --kernels sse9"), "available: auto, reference",
                          "unknown kernels lists the available ones");
    expect_one_line_error(run_stormo("inspect --model " + model + " --bogus"), "--bogus", "unknown option");
    expect_one_line_error(run_stormo("inspect --model " + model + " stray"), "stray", "stray argument");
    expect_one_line_error(run_stormo("inspect --model " + model + " --threads 0"), "--threads", "zero threads");
    expect_one_line_error(run_stormo("inspect --model " + model + " --threads many"), "--threads", "threads not a number");
    expect_one_line_error(run_stormo("inspect --model " + model + " --expert-budget 8GB"), "--expert-budget",
                          "bad size");
    expect_one_line_error(run_stormo("inspect --model " + model + " --family llama"), "--family llama", "unknown family");
    expect_one_line_error(run_stormo("inspect --model " + model + " --config /nonexistent/engine.yaml"),
                          "/nonexistent/engine.yaml", "missing config");
    expect_one_line_error(run_stormo("plugins --plugins-dir /nonexistent/plugins"), "/nonexistent/plugins",
                          "missing plugins dir");
    expect_one_line_error(run_stormo("frobnicate"), "frobnicate", "unknown command");
    expect_one_line_error(run_stormo(""), "no command", "no command");
    if (!stormo::testing::kernels_unusable_reason("vnni").empty())
        expect_one_line_error(run_stormo("inspect --model " + model + " --kernels vnni"), "vnni",
                              "forced vnni on a CPU without it");
}

// Installs this build into a temporary prefix, builds tests/out_of_tree_plugin against it with
// find_package(stormo), and checks the installed stormo loads that plugin and its own five.
// Labelled "slow" in ctest.
// The toy family's own GGUF architecture, with no host change: the installed stormo refuses the
// file without the toy plugin (naming the architecture), and with it `generate` and `run` load
// and run it (tokenizer, chat template and weights from the file).
void expect_toy_gguf_runs(const std::string& installed, const std::string& toy_dir, const std::string& file) {
    stormo::test::write_toy_gguf(file);
    const CliResult without = run_shell(installed + " generate --model " + quote(file) + " --ids 1,2,3 --max-tokens 4");
    EXPECT_NE(without.status, 0);
    EXPECT_NE(without.err.find("general.architecture \"toy\" has no mapping onto a loaded family"), std::string::npos) << without.err;
    const std::string with_toy = " --model " + quote(file) + " --plugins-dir " + quote(toy_dir);
    const CliResult generated = run_shell(installed + " generate" + with_toy + " --ids 72,105,33 --max-tokens 4 --ignore-eos");
    ASSERT_EQ(generated.status, 0) << generated.err;
    std::istringstream ids(generated.out);
    int64_t id = -1, count = 0;
    while (ids >> id) {
        EXPECT_GE(id, 0);
        EXPECT_LT(id, stormo::test::kToyVocab);
        ++count;
    }
    EXPECT_EQ(count, 4) << generated.out;
    const CliResult ran = run_shell(installed + " run" + with_toy + " --prompt 'Hello' --max-tokens 4");
    EXPECT_EQ(ran.status, 0) << ran.err;
}

// The toy family's own synth preset, written by the installed stormo and generated from: a
// family out of tree describes its checkpoints and runs them with no change to the host.
void expect_toy_synth_runs(const std::string& installed, const std::string& toy_dir, const std::string& scratch) {
    const std::string plugins = " --plugins-dir " + quote(toy_dir);
    const CliResult list = run_shell(installed + " synth --list" + plugins);
    ASSERT_EQ(list.status, 0) << list.err;
    EXPECT_NE(list.out.find("toy-tiny\t"), std::string::npos) << list.out;
    EXPECT_NE(list.out.find("gpt-oss-tiny\t"), std::string::npos) << list.out;
    const std::string model = scratch + "/toy-tiny";
    const CliResult synth = run_shell(installed + " synth --preset toy-tiny --seed 3 --out " + quote(model) + plugins);
    ASSERT_EQ(synth.status, 0) << synth.err;
    const CliResult generated =
        run_shell(installed + " generate --model " + quote(model) + " --ids 1,2,3 --max-tokens 4 --ignore-eos" + plugins);
    ASSERT_EQ(generated.status, 0) << generated.err;
    std::istringstream ids(generated.out);
    int count = 0;
    for (int id = 0; ids >> id; ++count) {
        EXPECT_GE(id, 0);
        EXPECT_LT(id, 256);
    }
    EXPECT_EQ(count, 4) << generated.out;
}

TEST(CliOutOfTreePlugin, InstalledStormoLoadsToyPlugin) {
    const auto start = std::chrono::steady_clock::now();
    ScratchDir prefix;
    ASSERT_FALSE(prefix.path().empty());
    const std::string cmake = quote(STORMO_CMAKE_COMMAND);
    const CliResult install = run_shell(cmake + " --install " + quote(STORMO_BUILD_DIR) + " --prefix " +
                                        quote(prefix.path()));
    ASSERT_EQ(install.status, 0) << install.out << install.err;
    const std::string build = prefix.file("toy-build");
    const CliResult configure =
        run_shell(cmake + " -S " + quote(STORMO_OUT_OF_TREE_PLUGIN_SOURCE) + " -B " + quote(build) +
                  " -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + quote(prefix.path()));
    ASSERT_EQ(configure.status, 0) << configure.out << configure.err;
    const CliResult compile = run_shell(cmake + " --build " + quote(build) + " -j2");
    ASSERT_EQ(compile.status, 0) << compile.out << compile.err;
    const std::string toy_dir = build + "/plugins";
    ASSERT_TRUE(fs::exists(toy_dir + "/libstormo-model-toy.so"));
    expect_toy_gguf_runs(quote(prefix.file("bin/stormo")), toy_dir, prefix.file("toy.gguf"));

    const std::string installed = quote(prefix.file("bin/stormo"));
    const CliResult with_toy = run_shell(installed + " plugins --json --plugins-dir " + quote(toy_dir));
    ASSERT_EQ(with_toy.status, 0) << with_toy.err;
    const stormo::Json list = parse_json(with_toy.out);
    const stormo::Json* toy = entry_named(list, "toy");
    ASSERT_NE(toy, nullptr) << with_toy.out;
    EXPECT_TRUE(flag(*toy, "usable"));
    EXPECT_FALSE(flag(*toy, "rejected"));
    EXPECT_EQ(string_of(*toy, "kind"), "model");
    EXPECT_EQ(string_of(*toy, "version"), "1.0.0");

    // Without flags, the installed binary finds the installed plugins beside it.
    const CliResult plain = run_shell(installed + " plugins --json");
    ASSERT_EQ(plain.status, 0) << plain.err;
    const stormo::Json own = parse_json(plain.out);
    const std::string plugin_dir = fs::weakly_canonical(prefix.file("lib/stormo/plugins")).string();
    for (const char* name : {"gpt_oss", "qwen3_moe", "glm_dsa", "avx2", "vnni"}) {
        const stormo::Json* p = entry_named(own, name);
        ASSERT_NE(p, nullptr) << name << " not found by the installed stormo\n" << plain.out;
        EXPECT_FALSE(flag(*p, "rejected")) << name << ": " << plain.out;
        EXPECT_EQ(fs::weakly_canonical(fs::path(string_of(*p, "path")).parent_path()).string(), plugin_dir) << name;
    }
    EXPECT_EQ(entry_named(own, "toy"), nullptr);
    expect_toy_synth_runs(installed, toy_dir, prefix.path());
    const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 60.0) << "the out-of-tree plugin test took " << seconds << " s";
}
