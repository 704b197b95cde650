// Plugin discovery and loading: the build's plugins load, and every kind of bad library is
// refused with its reason while the good ones still load.
#include <gtest/gtest.h>

#include "kernel_test_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <optional>
#include <string>

#include "compute/worker_pool.hpp"
#include "model/model_source.hpp"
#include "plugin_loading/library_bound.hpp"
#include "plugin_loading/plugin_loader.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "runtime/host_load_context.hpp"
#include "safetensors_writer.hpp"  // TempDir
#include "stormo/family_plugin.hpp"
#include "stormo/kernels_plugin.hpp"

namespace fs = std::filesystem;
using namespace stormo;

namespace {

const std::string kBuildPlugins = STORMO_BUILD_PLUGIN_DIR;
const std::string kTestPlugins = STORMO_TEST_PLUGIN_DIR;

std::string canonical(const std::string& p) { return fs::weakly_canonical(p).string(); }

PluginSearch only(std::vector<std::string> dirs) {
    PluginSearch s;
    s.builtin = false;
    s.environment = false;
    for (std::string& d : dirs) s.extra.push_back({std::move(d), "test", true});
    return s;
}

PluginRegistry discover(const PluginSearch& search) {
    auto r = PluginRegistry::discover(search);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
    return r ? std::move(*r) : PluginRegistry{};
}

const RejectedPlugin* rejected_named(const PluginRegistry& r, const std::string& file_name) {
    for (const RejectedPlugin& p : r.rejected())
        if (fs::path(p.path).filename() == file_name) return &p;
    return nullptr;
}

// Every plugin the build wrote (a family dropped into plugins/ is one more, without this test
// knowing its name).
std::vector<std::string> built_plugin_files() {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(kBuildPlugins)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with("libstormo-") && name.ends_with(".so")) out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
}

void expect_build_plugins_loaded(const PluginRegistry& r) {
    for (const char* name : {"avx2", "vnni", "qwen3_moe", "glm_dsa"}) {
        const LoadedPlugin* p = r.find(name);
        ASSERT_NE(p, nullptr) << name << " did not load";
        EXPECT_FALSE(p->version.empty()) << name;
        EXPECT_EQ(canonical(fs::path(p->path).parent_path().string()), canonical(kBuildPlugins)) << name;
    }
    if (fs::exists(fs::path(kBuildPlugins) / "libstormo-model-gpt_oss.so")) {
        EXPECT_NE(r.find("gpt_oss"), nullptr);
    }
}

}  // namespace

TEST(PluginLoader, FileNamesSayKindAndName) {
    auto k = parse_plugin_file_name("libstormo-kernels-avx2.so");
    ASSERT_TRUE(k);
    EXPECT_EQ(k->kind, PluginKind::kernels);
    EXPECT_EQ(k->name, "avx2");
    auto m = parse_plugin_file_name("libstormo-model-qwen3_moe.so");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, PluginKind::model);
    EXPECT_EQ(m->name, "qwen3_moe");
    EXPECT_FALSE(parse_plugin_file_name("libstormo-core.so"));
    EXPECT_FALSE(parse_plugin_file_name("libstormo-model-.so"));
    EXPECT_FALSE(parse_plugin_file_name("libstormo-model-x.so.1"));
    EXPECT_FALSE(parse_plugin_file_name("stormo-model-x.so"));
}

TEST(PluginLoader, BuiltInDirectoryIsBesideTheProgram) {
    // The test binary lives in build/bin like the stormo CLI, so both find build/lib/stormo/plugins.
    EXPECT_EQ(canonical(builtin_plugin_dir()), canonical(kBuildPlugins));
}

TEST(PluginLoader, LoadsEveryBuiltPluginWithoutFlags) {
    PluginSearch s;
    s.environment = false;
    const PluginRegistry r = discover(s);
    EXPECT_TRUE(r.rejected().empty()) << r.rejected().front().path << ": " << r.rejected().front().reason;
    expect_build_plugins_loaded(r);
    EXPECT_EQ(r.plugins().size(), built_plugin_files().size());
    for (const LoadedPlugin& p : r.plugins()) {
        if (p.kind == PluginKind::model) {
            EXPECT_TRUE(p.family) << p.name;
            EXPECT_FALSE(p.kernels) << p.name;
            EXPECT_FALSE(p.accepts.empty()) << p.name;
        } else {
            // Created exactly when this CPU can run it.
            EXPECT_EQ(static_cast<bool>(p.kernels), p.unusable_reason.empty()) << p.name << ": " << p.unusable_reason;
            EXPECT_FALSE(p.family) << p.name;
            EXPECT_FALSE(p.cpu_features.empty()) << p.name;
        }
    }
    const LoadedPlugin* vnni = r.find("vnni");
    ASSERT_NE(vnni, nullptr);
    // The vnni plugin lists the VNNI flavour it would run here: AVX-VNNI or AVX512-VNNI.
    bool lists_vnni = false;
    for (CpuFeature f : vnni->cpu_features) lists_vnni |= f == CpuFeature::avx_vnni || f == CpuFeature::avx512_vnni;
    EXPECT_TRUE(lists_vnni);
    const bool usable_here = stormo::testing::kernels_unusable_reason("vnni").empty();
    EXPECT_EQ(static_cast<bool>(vnni->kernels), usable_here);
    if (!usable_here) {
        EXPECT_NE(vnni->unusable_reason.find("vnni"), std::string::npos) << vnni->unusable_reason;
    }
}

TEST(PluginLoader, RefusesLibraryWithoutEntryPoints) {
    const PluginRegistry r = discover(only({kTestPlugins + "/bogus"}));
    ASSERT_EQ(r.rejected().size(), 1u);
    EXPECT_EQ(r.rejected()[0].reason, "not a stormo plugin: missing symbol stormo_plugin_abi");
    EXPECT_EQ(r.rejected()[0].file_kind, "model");
    EXPECT_EQ(r.rejected()[0].file_name, "bogus");
    EXPECT_TRUE(r.plugins().empty());
}

TEST(PluginLoader, RefusesAnotherAbi) {
    const PluginRegistry r = discover(only({kTestPlugins + "/wrong_abi"}));
    ASSERT_EQ(r.rejected().size(), 1u);
    EXPECT_EQ(r.rejected()[0].reason, "built for ABI stormo-sdk-0/test-compiler-1/test-stdlib, this host is " +
                                          std::string(kStormoAbi) + " (the SDK version differs)");
    EXPECT_TRUE(r.plugins().empty());
}

// Built from the same sources and SDK version, but on headers where WeightView gained a member:
// only the layout hash tells, and it is enough.
TEST(PluginLoader, RefusesAPluginBuiltOnAnotherStructLayout) {
    const PluginRegistry r = discover(only({kTestPlugins + "/layout_changed"}));
    ASSERT_EQ(r.rejected().size(), 1u);
    const std::string& why = r.rejected()[0].reason;
    EXPECT_NE(why.find("(the struct layout differs)"), std::string::npos) << why;
    const std::string ours(kStormoAbi);
    const std::string same_until_layout = ours.substr(0, ours.rfind("/layout-") + 8);
    EXPECT_NE(why.find("built for ABI " + same_until_layout), std::string::npos) << why;
    EXPECT_EQ(why.find("built for ABI " + ours + ","), std::string::npos) << why;
    EXPECT_TRUE(r.plugins().empty());
}

TEST(PluginLoader, AbiStringNamesEveryPartItCovers) {
    const std::string abi(kStormoAbi);
    for (const char* part : {"stormo-sdk-", "/tl-expected-", "/layout-"})
        EXPECT_NE(abi.find(part), std::string::npos) << abi;
    EXPECT_TRUE(abi.find("/ndebug") != std::string::npos || abi.find("/assert") != std::string::npos) << abi;
    EXPECT_EQ(abi.size() - (abi.rfind("/layout-") + 8), 16u) << "a 64-bit hash in hex: " << abi;
}

TEST(PluginLoader, RefusesSecondPluginOfTheSameNameNamingBothPaths) {
    const std::string a = kTestPlugins + "/dup_a/libstormo-kernels-dup.so";
    const std::string b = kTestPlugins + "/dup_b/libstormo-kernels-dup.so";
    const PluginRegistry r = discover(only({kTestPlugins + "/dup_a", kTestPlugins + "/dup_b"}));
    ASSERT_EQ(r.plugins().size(), 1u);
    EXPECT_EQ(r.plugins()[0].name, "dup");
    EXPECT_EQ(canonical(r.plugins()[0].path), canonical(a));
    ASSERT_EQ(r.rejected().size(), 1u);
    const std::string& why = r.rejected()[0].reason;
    EXPECT_NE(why.find("duplicate plugin name 'dup'"), std::string::npos) << why;
    EXPECT_NE(why.find(canonical(a)), std::string::npos) << why;
    EXPECT_NE(why.find(canonical(b)), std::string::npos) << why;
}

TEST(PluginLoader, RefusesFailingFactoryWithItsMessage) {
    const PluginRegistry r = discover(only({kTestPlugins + "/failing"}));
    ASSERT_EQ(r.rejected().size(), 1u);
    EXPECT_EQ(r.rejected()[0].reason, "its factory failed: failing: this factory refuses on purpose (test plugin)");
}

TEST(PluginLoader, RefusesDescriptionThatContradictsTheFileName) {
    const PluginRegistry r = discover(only({kTestPlugins + "/misnamed"}));
    ASSERT_EQ(r.rejected().size(), 1u);
    EXPECT_EQ(r.rejected()[0].reason,
              "describes itself as model plugin 'othername' but its file name says model plugin 'misnamed'");
}

TEST(PluginLoader, RefusesTextFileNamedLikeAPlugin) {
    const PluginRegistry r = discover(only({kTestPlugins + "/junk"}));
    ASSERT_EQ(r.rejected().size(), 1u);
    const std::string& why = r.rejected()[0].reason;
    EXPECT_EQ(why.rfind("cannot load the library: ", 0), 0u) << why;
    EXPECT_EQ(r.rejected()[0].file_kind, "kernels");
}

TEST(PluginLoader, GoodPluginsLoadBesideEveryBadOne) {
    PluginSearch s;
    s.environment = false;
    for (const char* c : {"bogus", "wrong_abi", "dup_a", "dup_b", "failing", "misnamed", "junk", "layout_changed"})
        s.extra.push_back({kTestPlugins + "/" + c, "test", true});
    const PluginRegistry r = discover(s);
    expect_build_plugins_loaded(r);
    EXPECT_NE(r.find("dup"), nullptr);
    for (const char* f : {"libstormo-model-bogus.so", "libstormo-kernels-wrongabi.so", "libstormo-kernels-dup.so",
                          "libstormo-model-failing.so", "libstormo-model-misnamed.so", "libstormo-kernels-junk.so",
                          "libstormo-kernels-layout.so"})
        EXPECT_NE(rejected_named(r, f), nullptr) << f << " was not refused";
    EXPECT_EQ(r.rejected().size(), 7u);
    EXPECT_EQ(r.plugins().size(), built_plugin_files().size() + 1);
}

TEST(PluginLoader, SearchesStormoPluginPathThenExtraDirectories) {
    const char* previous = std::getenv("STORMO_PLUGIN_PATH");
    const std::optional<std::string> saved = previous ? std::optional<std::string>(previous) : std::nullopt;
    const std::string env = "/nonexistent/stormo-dir::" + kTestPlugins + "/dup_a";
    ASSERT_EQ(setenv("STORMO_PLUGIN_PATH", env.c_str(), 1), 0);
    PluginSearch s;
    s.builtin = false;
    s.extra.push_back({kTestPlugins + "/dup_b", "--plugins-dir", true});
    const auto dirs = plugin_search_dirs(s);
    auto r = PluginRegistry::discover(s);
    if (saved) setenv("STORMO_PLUGIN_PATH", saved->c_str(), 1);
    else unsetenv("STORMO_PLUGIN_PATH");

    ASSERT_EQ(dirs.size(), 3u);
    EXPECT_EQ(dirs[0].origin, "STORMO_PLUGIN_PATH");
    EXPECT_EQ(dirs[1].origin, "STORMO_PLUGIN_PATH");
    EXPECT_EQ(dirs[2].origin, "--plugins-dir");
    ASSERT_TRUE(r) << r.error().message;
    // The environment's directory comes first, so its copy wins and the --plugins-dir one is refused.
    ASSERT_NE(r->find("dup"), nullptr);
    EXPECT_EQ(canonical(r->find("dup")->path), canonical(kTestPlugins + "/dup_a/libstormo-kernels-dup.so"));
    ASSERT_EQ(r->rejected().size(), 1u);
    ASSERT_EQ(r->searched().size(), 2u);  // the nonexistent env entry is skipped quietly
}

TEST(PluginLoader, NamedDirectoryThatDoesNotExistIsAnError) {
    PluginSearch s;
    s.builtin = false;
    s.environment = false;
    s.extra.push_back({"/nonexistent/stormo-plugins", "--plugins-dir", true});
    auto r = PluginRegistry::discover(s);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "--plugins-dir /nonexistent/stormo-plugins: no such directory");
}

TEST(PluginLoader, DirectoryNamedTwiceIsSearchedOnce) {
    PluginSearch s;
    s.environment = false;
    s.extra.push_back({kBuildPlugins + "/../plugins", "--plugins-dir", true});
    const PluginRegistry r = discover(s);
    EXPECT_TRUE(r.rejected().empty());
    EXPECT_EQ(r.plugins().size(), built_plugin_files().size());
}

TEST(PluginLoader, FamilyObjectKeepsItsLibraryAfterTheRegistryIsGone) {
    std::shared_ptr<const FamilyPlugin> family;
    {
        const PluginRegistry r = discover(only({kBuildPlugins}));
        ASSERT_NE(r.find("qwen3_moe"), nullptr);
        family = r.find("qwen3_moe")->family;
    }
    ASSERT_TRUE(family);
    // Calls into the plugin's code after every other owner of the library is gone.
    EXPECT_EQ(family->classify("model.layers.0.mlp.experts.3.up_proj.weight"), TensorRole::experts);
    EXPECT_EQ(family->classify("lm_head.weight"), TensorRole::head);
}

TEST(PluginLoader, ScoreModelConfigByArchitectureThenModelType) {
    auto config = [](const char* text) {
        auto c = ModelConfig::parse(text, "config.json");
        EXPECT_TRUE(c) << (c ? "" : c.error().message);
        return c ? *c : ModelConfig{};
    };
    const char* accepts = "Qwen3MoeForCausalLM, qwen3_moe";
    EXPECT_EQ(score_model_config(config(R"({"architectures":["Qwen3MoeForCausalLM"],"model_type":"qwen3_moe"})"), accepts), 100);
    EXPECT_EQ(score_model_config(config(R"({"architectures":["Other"],"model_type":"qwen3_moe"})"), accepts), 50);
    EXPECT_EQ(score_model_config(config(R"({"model_type":"qwen3_moe"})"), accepts), 50);
    EXPECT_EQ(score_model_config(config(R"({"architectures":["LlamaForCausalLM"],"model_type":"llama"})"), accepts), 0);
    EXPECT_EQ(score_model_config(config(R"({"architectures":"Qwen3MoeForCausalLM"})"), accepts), 0);
    EXPECT_EQ(score_model_config(config("{}"), accepts), 0);
    EXPECT_EQ(score_model_config(config(R"({"model_type":"qwen3_moe"})"), nullptr), 0);
}

namespace stormo {
namespace {

// A model made by a family plugin keeps that plugin's library loaded: with the registry (and with
// it every other reference to the library) gone, the model's virtual functions and destructor
// still run from mapped code.
TEST(PluginLifetime, AModelKeepsItsFamilysLibraryLoaded) {
    auto registry = std::make_unique<PluginRegistry>(discover(only({kBuildPlugins})));
    const LoadedPlugin* gpt_oss = registry->find("gpt_oss");
    ASSERT_NE(gpt_oss, nullptr);
    auto source = open_model_directory(std::string(STORMO_TEST_DATA_DIR) + "/fixtures/gpt_oss");
    ASSERT_TRUE(source.has_value()) << source.error().message;
    WorkerPool pool(1);
    HostLoadContext context(**source, Compute{&reference_kernels(), &pool}, true);
    auto loaded = gpt_oss->family->load(context);
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
    const std::weak_ptr<const void> library = gpt_oss->library;
    {
        LibraryBound<Model> model = bind_to_library(std::move(*loaded), gpt_oss->library);
        registry.reset();
        EXPECT_EQ(library.use_count(), 1) << "the model alone holds the library";
        EXPECT_EQ(model->n_layers(), 4);
        EXPECT_EQ(model->layer_plan(0).kv.size(), 2u);
    }
    EXPECT_TRUE(library.expired()) << "the model was the last owner";
}

}  // namespace
}  // namespace stormo

// A library cut short (a copy or a download that stopped) crashed every command with SIGBUS: dlopen
// mapped segments past the file's end. A FIFO named like a plugin made every command wait forever.
// Both are refused now, naming what is wrong, and the search goes on.
TEST(PluginLoader, RefusesALibraryCutShortAndAFileThatIsNoFile) {
    stormo::test::TempDir dir;
    const fs::path whole = fs::path(kBuildPlugins) / "libstormo-kernels-avx2.so";
    for (const uintmax_t cut : {uintmax_t{5000}, fs::file_size(whole) / 2}) {
        const std::string name = "libstormo-kernels-cut" + std::to_string(cut) + ".so";
        std::ifstream in(whole, std::ios::binary);
        std::string bytes(static_cast<size_t>(cut), '\0');
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        std::ofstream(dir.file(name), std::ios::binary) << bytes;
    }
    ASSERT_EQ(mkfifo(dir.file("libstormo-kernels-fifo.so").c_str(), 0600), 0);
    const PluginRegistry r = discover(only({dir.path()}));
    EXPECT_TRUE(r.plugins().empty());
    ASSERT_EQ(r.rejected().size(), 3u);
    const RejectedPlugin* fifo = rejected_named(r, "libstormo-kernels-fifo.so");
    ASSERT_NE(fifo, nullptr);
    EXPECT_EQ(fifo->reason, "cannot load the library: not a regular file");
    for (const RejectedPlugin& p : r.rejected())
        if (&p != fifo) EXPECT_NE(p.reason.find("cannot load the library: the file is cut short ("), std::string::npos) << p.reason;
}
