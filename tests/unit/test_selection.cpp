// Selection: the family chosen for each fixture's config.json, the kernels chosen for this CPU
// (and for made-up CPUs), forcing by option or YAML, and the errors that name what is wrong.
#include <gtest/gtest.h>

#include "compute/kernel_table.hpp"
#include "kernel_test_support.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "plugin_loading/plugin_registry.hpp"
#include "plugin_loading/selection.hpp"
#include "runtime/engine_config.hpp"
#include "stormo/cpu_features.hpp"

namespace fs = std::filesystem;
using namespace stormo;

namespace {

const std::string kFixtures = std::string(STORMO_TEST_DATA_DIR) + "/fixtures";
const std::string kBuildPlugins = STORMO_BUILD_PLUGIN_DIR;

const PluginRegistry& registry() {
    // One registry for the suite: discovery loads the libraries once.
    static const PluginRegistry r = [] {
        PluginSearch s;
        s.environment = false;
        auto d = PluginRegistry::discover(s);
        return d ? std::move(*d) : PluginRegistry{};
    }();
    return r;
}

ModelConfig read_config(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto c = ModelConfig::parse(text.str(), path);
    EXPECT_TRUE(c) << path << ": " << (c ? "" : c.error().message);
    return c ? *c : ModelConfig{};
}

ModelConfig config_of(const char* json) {
    auto c = ModelConfig::parse(json, "config.json");
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    return c ? *c : ModelConfig{};
}

CpuFeature feature(const char* name) {
    CpuFeature f{};
    EXPECT_TRUE(cpu_feature_from_name(name, f)) << name;
    return f;
}

CpuFeatureSet cpu_with(std::initializer_list<const char*> names) {
    CpuFeatureSet s;
    for (const char* n : names) s.add(feature(n));
    return s;
}

bool has_plugin_file(const char* file) { return fs::exists(fs::path(kBuildPlugins) / file); }

}  // namespace

TEST(Selection, FamilyForEachFixture) {
    ASSERT_NE(registry().find("qwen3_moe"), nullptr);
    ASSERT_NE(registry().find("glm_dsa"), nullptr);
    const bool gpt_oss_built = has_plugin_file("libstormo-model-gpt_oss.so");
    int checked = 0;
    for (const auto& entry : fs::directory_iterator(kFixtures)) {
        if (!fs::exists(entry.path() / "config.json")) continue;
        const std::string dir = entry.path().filename().string();
        std::string expected;
        if (dir.starts_with("gpt_oss")) expected = "gpt_oss";
        else if (dir.starts_with("qwen3_moe")) expected = "qwen3_moe";
        else if (dir.starts_with("glm_moe_dsa")) expected = "glm_dsa";
        else if (dir.starts_with("deepseek_v3")) expected = "deepseek_v3";
        else ADD_FAILURE() << "fixture " << dir << " has no expected family in this test";
        if (expected == "gpt_oss" && !gpt_oss_built) continue;
        auto chosen = select_family(registry(), read_config((entry.path() / "config.json").string()), PluginRequest{});
        ASSERT_TRUE(chosen) << dir << ": " << chosen.error().message;
        EXPECT_EQ(chosen->plugin->name, expected) << dir;
        EXPECT_EQ(chosen->score, 100) << dir;  // matched by architectures
        EXPECT_FALSE(chosen->forced);
        ++checked;
    }
    EXPECT_GE(checked, 4);
}

TEST(Selection, ModelTypeAloneScoresFifty) {
    auto chosen = select_family(registry(), config_of(R"({"model_type": "glm_moe_dsa"})"), PluginRequest{});
    ASSERT_TRUE(chosen) << chosen.error().message;
    EXPECT_EQ(chosen->plugin->name, "glm_dsa");
    EXPECT_EQ(chosen->score, 50);
}

TEST(Selection, UnknownArchitectureListsWhatWasFoundAndWhatIsAvailable) {
    auto chosen = select_family(registry(),
                                config_of(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})"),
                                PluginRequest{});
    ASSERT_FALSE(chosen);
    const std::string& m = chosen.error().message;
    EXPECT_NE(m.find("LlamaForCausalLM"), std::string::npos) << m;
    EXPECT_NE(m.find("'llama'"), std::string::npos) << m;
    EXPECT_NE(m.find("qwen3_moe (Qwen3MoeForCausalLM, qwen3_moe)"), std::string::npos) << m;
    EXPECT_NE(m.find("glm_dsa (GlmMoeDsaForCausalLM, glm_moe_dsa)"), std::string::npos) << m;
    EXPECT_NE(m.find("config.json"), std::string::npos) << m;
}

TEST(Selection, ForcedFamilyWinsAndUnknownFamilyIsListed) {
    const ModelConfig qwen = read_config(kFixtures + "/qwen3_moe/config.json");
    auto forced = select_family(registry(), qwen, PluginRequest{"glm_dsa", "--family"});
    ASSERT_TRUE(forced) << forced.error().message;
    EXPECT_EQ(forced->plugin->name, "glm_dsa");
    EXPECT_TRUE(forced->forced);
    EXPECT_EQ(forced->score, 0);

    auto unknown = select_family(registry(), qwen, PluginRequest{"llama", "--family"});
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().message.rfind("--family llama: no such model plugin", 0), 0u) << unknown.error().message;
    EXPECT_NE(unknown.error().message.find("qwen3_moe"), std::string::npos);
    // A kernels plugin is not a family.
    EXPECT_FALSE(select_family(registry(), qwen, PluginRequest{"avx2", "--family"}));
}

TEST(Selection, KernelsForThisCpu) {
    const CpuFeatureSet cpu = detect_cpu_features();
    const LoadedPlugin* avx2 = registry().find("avx2");
    const LoadedPlugin* vnni = registry().find("vnni");
    ASSERT_NE(avx2, nullptr);
    ASSERT_NE(vnni, nullptr);
    auto chosen = select_kernels(registry(), cpu, PluginRequest{});
    ASSERT_TRUE(chosen) << chosen.error().message;
    EXPECT_FALSE(chosen->forced);
    const bool vnni_ok = missing_cpu_features(vnni->cpu_features, cpu).empty();
    const bool avx2_ok = missing_cpu_features(avx2->cpu_features, cpu).empty();
    EXPECT_EQ(kernels_score(*vnni, cpu) > 0, vnni_ok);
    EXPECT_EQ(kernels_score(*avx2, cpu) > 0, avx2_ok);
    const std::string expected = vnni_ok ? "vnni" : avx2_ok ? "avx2" : "reference";
    EXPECT_EQ(chosen->name, expected);
    EXPECT_EQ(vnni_ok, stormo::testing::kernels_unusable_reason("vnni").empty()) << "the host and the test read the CPU differently";
}

TEST(Selection, KernelsForMadeUpCpus) {
    // Scores are additive, so VNNI outscores AVX2 where both run; with neither, the reference runs.
    const CpuFeatureSet avx2_only = cpu_with({"sse42", "avx", "avx2", "fma", "f16c", "bmi2"});
    const CpuFeatureSet old = cpu_with({"sse42"});
    const LoadedPlugin* avx2 = registry().find("avx2");
    const LoadedPlugin* vnni = registry().find("vnni");
    ASSERT_NE(avx2, nullptr);
    ASSERT_NE(vnni, nullptr);
    // The vnni plugin lists the flavour it would run on this machine; a CPU with those features.
    CpuFeatureSet both = avx2_only;
    for (CpuFeature f : vnni->cpu_features) both.add(f);
    EXPECT_GT(kernels_score(*vnni, both), kernels_score(*avx2, both));
    EXPECT_GT(kernels_score(*avx2, both), reference_kernels_score(both));
    EXPECT_EQ(kernels_score(*vnni, avx2_only), 0);
    EXPECT_GT(kernels_score(*avx2, avx2_only), reference_kernels_score(avx2_only));
    EXPECT_EQ(kernels_score(*avx2, old), 0);
    EXPECT_EQ(kernels_score(*vnni, old), 0);
    EXPECT_EQ(reference_kernels_score(old), 1);

    auto c = select_kernels(registry(), old, PluginRequest{});
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->name, "reference");
    EXPECT_EQ(c->plugin, nullptr);
    if (avx2->kernels) {  // created here: this machine runs AVX2
        auto b = select_kernels(registry(), avx2_only, PluginRequest{});
        ASSERT_TRUE(b) << b.error().message;
        EXPECT_EQ(b->name, "avx2");
    }
    // A plugin is only chosen where it was created: on a CPU without VNNI the vnni plugin's
    // factory never ran, so even a (made-up) CPU with VNNI cannot select it from this registry.
    if (!vnni->kernels) {
        EXPECT_FALSE(vnni->unusable_reason.empty());
        auto a = select_kernels(registry(), both, PluginRequest{});
        ASSERT_TRUE(a) << a.error().message;
        EXPECT_NE(a->name, "vnni");
        auto forced = select_kernels(registry(), both, PluginRequest{"vnni", "--kernels"});
        ASSERT_FALSE(forced);
        EXPECT_NE(forced.error().message.find("not created on this machine"), std::string::npos);
    }
}

TEST(Selection, ForcedReferenceIsTheReferenceTable) {
    auto chosen = select_kernels(registry(), detect_cpu_features(), PluginRequest{"reference", "--kernels"});
    ASSERT_TRUE(chosen) << chosen.error().message;
    EXPECT_EQ(chosen->name, "reference");
    EXPECT_EQ(chosen->plugin, nullptr);
    EXPECT_TRUE(chosen->forced);
    const KernelTable table = build_kernel_table(*chosen);
    const KernelTable& ref = reference_kernels();
    EXPECT_EQ(table.matmul, ref.matmul);
    EXPECT_EQ(table.rmsnorm, ref.rmsnorm);
    for (const KernelEntry& e : kernel_providers(table, *chosen, false)) {
        if (e.provider != "none") {
            EXPECT_EQ(e.provider, "reference") << e.operation;
        }
    }
}

TEST(Selection, ForcedUnusablePluginNamesTheMissingFeatures) {
    const CpuFeatureSet avx2_only = cpu_with({"sse42", "avx", "avx2", "fma", "f16c", "bmi2"});
    auto chosen = select_kernels(registry(), avx2_only, PluginRequest{"vnni", "--kernels"});
    ASSERT_FALSE(chosen);
    EXPECT_EQ(chosen.error().message.rfind("--kernels vnni: this CPU lacks ", 0), 0u) << chosen.error().message;
    EXPECT_NE(chosen.error().message.find("vnni", 14), std::string::npos) << chosen.error().message;

    auto old = select_kernels(registry(), cpu_with({"sse42"}), PluginRequest{"avx2", "kernels in my.yaml"});
    ASSERT_FALSE(old);
    EXPECT_EQ(old.error().message.rfind("kernels in my.yaml avx2: this CPU lacks avx2", 0), 0u) << old.error().message;

    // And on this machine, when it lacks both VNNI flavours (checked, not assumed).
    const CpuFeatureSet here = detect_cpu_features();
    if (!stormo::testing::kernels_unusable_reason("vnni").empty()) {
        auto local = select_kernels(registry(), here, PluginRequest{"vnni", "--kernels"});
        ASSERT_FALSE(local);
        EXPECT_NE(local.error().message.find("vnni"), std::string::npos) << local.error().message;
    }
}

TEST(Selection, UnknownKernelsNameListsTheAvailableOnes) {
    auto chosen = select_kernels(registry(), detect_cpu_features(), PluginRequest{"sse9", "--kernels"});
    ASSERT_FALSE(chosen);
    const std::string& m = chosen.error().message;
    EXPECT_EQ(m.rfind("--kernels sse9: no such kernels plugin (available: auto, reference, avx2, vnni)", 0), 0u) << m;
    // A model plugin is not a kernels plugin.
    EXPECT_FALSE(select_kernels(registry(), detect_cpu_features(), PluginRequest{"qwen3_moe", "--kernels"}));
}

TEST(Selection, PluginKernelsInstallOverTheReference) {
    const CpuFeatureSet cpu = detect_cpu_features();
    const LoadedPlugin* avx2 = registry().find("avx2");
    ASSERT_NE(avx2, nullptr);
    if (kernels_score(*avx2, cpu) == 0) GTEST_SKIP() << "this CPU cannot run the avx2 plugin";
    auto chosen = select_kernels(registry(), cpu, PluginRequest{"avx2", "--kernels"});
    ASSERT_TRUE(chosen) << chosen.error().message;
    const KernelTable table = build_kernel_table(*chosen);
    const KernelsSelection reference{"reference", nullptr, 1, true};
    const std::vector<KernelEntry> ref = kernel_providers(reference_kernels(), reference, false);
    const std::vector<KernelEntry> mine = kernel_providers(table, *chosen, false);
    ASSERT_EQ(mine.size(), ref.size());
    int from_plugin = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
        // An operation the reference has is never lost; one it lacks (e.g. MXFP4 in_out) may stay empty.
        if (ref[i].provider == "none") continue;
        EXPECT_TRUE(mine[i].provider == "avx2" || mine[i].provider == "reference")
            << mine[i].operation << ": " << mine[i].provider;
        from_plugin += mine[i].provider == "avx2";
    }
    EXPECT_GT(from_plugin, 0) << "the avx2 plugin installed nothing";
    for (size_t f = 0; f < kWeightFormatCount; ++f)
        for (size_t l = 0; l < kLayoutCount; ++l)
            if (reference_kernels().matmul[f][l] != nullptr) {
                EXPECT_NE(table.matmul[f][l], nullptr) << f << "," << l;
            }
}

TEST(Selection, YamlForcesKernelsAndFamily) {
    auto cfg = parse_engine_config("kernels: reference\nfamily: glm_dsa\n", "forced.yaml");
    ASSERT_TRUE(cfg) << cfg.error().message;
    auto k = select_kernels(registry(), detect_cpu_features(), PluginRequest{cfg->kernels, cfg->origin("kernels")});
    ASSERT_TRUE(k) << k.error().message;
    EXPECT_EQ(k->name, "reference");
    EXPECT_TRUE(k->forced);
    auto f = select_family(registry(), read_config(kFixtures + "/qwen3_moe/config.json"),
                           PluginRequest{cfg->family, cfg->origin("family")});
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->plugin->name, "glm_dsa");

    auto bad = parse_engine_config("kernels: sse9\n", "bad.yaml");
    ASSERT_TRUE(bad);
    auto e = select_kernels(registry(), detect_cpu_features(), PluginRequest{bad->kernels, bad->origin("kernels")});
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().message.rfind("kernels in bad.yaml sse9: no such kernels plugin", 0), 0u) << e.error().message;
}
