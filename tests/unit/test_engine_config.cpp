// The YAML engine configuration: defaults (and configs/default.yaml holding them), every key,
// and the errors naming the key and the file; the size syntax.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>

#include "runtime/engine_config.hpp"

namespace fs = std::filesystem;
using namespace stormo;

namespace {

std::string error_of(std::string_view yaml, const std::string& source = "test.yaml") {
    auto c = parse_engine_config(yaml, source);
    EXPECT_FALSE(c) << "accepted: " << yaml;
    return c ? std::string() : c.error().message;
}

uint64_t bytes_of(std::string_view text) {
    auto s = parse_size(text, "--expert-budget");
    EXPECT_TRUE(s) << text << ": " << (s ? "" : s.error().message);
    if (!s) return 0;
    EXPECT_EQ(s->kind, SizeSpec::Kind::bytes) << text;
    return s->bytes;
}

std::string size_error(std::string_view text) {
    auto s = parse_size(text, "--expert-budget");
    EXPECT_FALSE(s) << "accepted: " << text;
    return s ? std::string() : s.error().message;
}

void expect_same_values(const EngineConfig& a, const EngineConfig& b) {
    EXPECT_EQ(a.kernels, b.kernels);
    EXPECT_EQ(a.family, b.family);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_EQ(a.expert_budget.kind, b.expert_budget.kind);
    EXPECT_EQ(a.expert_budget.bytes, b.expert_budget.bytes);
    EXPECT_EQ(a.plugins_dirs, b.plugins_dirs);
    EXPECT_EQ(a.context, b.context);
    EXPECT_EQ(a.eviction, b.eviction);
    EXPECT_EQ(a.prefetch, b.prefetch);
    EXPECT_EQ(a.direct_io, b.direct_io);
    EXPECT_EQ(a.hotness_decay, b.hotness_decay);
    EXPECT_EQ(a.hotness_margin, b.hotness_margin);
    EXPECT_EQ(a.async_compute, b.async_compute);
    EXPECT_EQ(a.io_threads, b.io_threads);
    EXPECT_EQ(a.activations, b.activations);
    EXPECT_EQ(a.head, b.head);
    EXPECT_EQ(a.pin_threads, b.pin_threads);
    EXPECT_EQ(a.speculate, b.speculate);
    EXPECT_EQ(a.draft_max, b.draft_max);
    EXPECT_EQ(a.rank_timeout, b.rank_timeout);
    EXPECT_EQ(a.rank_split, b.rank_split);
}

}  // namespace

TEST(EngineConfig, Defaults) {
    const EngineConfig d = default_engine_config();
    EXPECT_EQ(d.kernels, "auto");
    EXPECT_EQ(d.family, "auto");
    EXPECT_FALSE(d.threads);
    EXPECT_EQ(d.expert_budget.kind, SizeSpec::Kind::automatic);
    EXPECT_TRUE(d.plugins_dirs.empty());
    EXPECT_EQ(d.context, 4096);
    EXPECT_EQ(d.eviction, EvictionPolicy::adaptive);
    EXPECT_TRUE(d.prefetch);
    EXPECT_TRUE(d.direct_io);
    EXPECT_EQ(d.origin("kernels"), "kernels (default)");
    EXPECT_EQ(d.activations, ActivationRoad::f32);
}

TEST(EngineConfig, StoreKeys) {
    auto c = parse_engine_config("hotness_decay: 0.8\nasync_compute: false\nio_threads: 8\n", "store.yaml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_DOUBLE_EQ(c->hotness_decay, 0.8);
    EXPECT_FALSE(c->async_compute);
    EXPECT_EQ(c->io_threads, 8);
    for (const char* bad : {"hotness_decay: 1.5\n", "hotness_decay: zero\n", "io_threads: 0\n", "async_compute: maybe\n"}) {
        auto e = parse_engine_config(bad, "bad.yaml");
        ASSERT_FALSE(e) << bad;
        EXPECT_NE(e.error().message.find(std::string(bad).substr(0, std::string(bad).find(':'))), std::string::npos)
            << e.error().message;
    }
}

TEST(EngineConfig, DefaultYamlHoldsTheDefaults) {
    const std::string path = std::string(STORMO_SOURCE_DIR) + "/configs/default.yaml";
    auto c = load_engine_config(path);
    ASSERT_TRUE(c) << c.error().message;
    expect_same_values(*c, default_engine_config());
    EXPECT_EQ(c->source, path);
    // The file sets every key explicitly, so it documents each one; `context: auto` leaves the
    // context to the run, so it records no origin (a given context would have one).
    for (const std::string& key : engine_config_keys())
        EXPECT_EQ(c->origin(key), key == "context" ? key + " (default)" : key + " in " + path)
            << key << " is not set in configs/default.yaml";
}

TEST(EngineConfig, EveryKey) {
    auto c = parse_engine_config(R"(
kernels: avx2
family: qwen3_moe
threads: 3
expert_budget: 8GiB
plugins_dirs: [/opt/a, /opt/b]
context: 1024
eviction: lru
prefetch: false
direct_io: no
activations: int8
rank_split: weighted
)",
                                 "every.yaml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->kernels, "avx2");
    EXPECT_EQ(c->family, "qwen3_moe");
    EXPECT_EQ(c->threads, 3);
    EXPECT_EQ(c->expert_budget.kind, SizeSpec::Kind::bytes);
    EXPECT_EQ(c->expert_budget.bytes, uint64_t{8} << 30);
    EXPECT_EQ(c->plugins_dirs, (std::vector<std::string>{"/opt/a", "/opt/b"}));
    EXPECT_EQ(c->context, 1024);
    EXPECT_EQ(c->eviction, EvictionPolicy::lru);
    EXPECT_FALSE(c->prefetch);
    EXPECT_FALSE(c->direct_io);
    EXPECT_EQ(c->activations, ActivationRoad::int8);
    EXPECT_EQ(c->rank_split, RankSplit::weighted);
    EXPECT_EQ(c->origin("threads"), "threads in every.yaml");
    EXPECT_EQ(c->source, "every.yaml");
}

TEST(EngineConfig, KeysAbsentKeepTheirDefaults) {
    auto c = parse_engine_config("threads: auto\nexpert_budget: all\n", "partial.yaml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_FALSE(c->threads);
    EXPECT_EQ(c->expert_budget.kind, SizeSpec::Kind::all);
    EXPECT_EQ(c->kernels, "auto");
    EXPECT_EQ(c->context, 4096);
    auto empty = parse_engine_config("# nothing but a comment\n", "empty.yaml");
    ASSERT_TRUE(empty) << empty.error().message;
    expect_same_values(*empty, default_engine_config());
}

TEST(EngineConfig, UnknownKeyNamesTheKeyTheFileAndTheKnownKeys) {
    const std::string m = error_of("kernel: avx2\n", "my.yaml");
    EXPECT_EQ(m, "my.yaml: unknown key 'kernel' (known keys: kernels, family, threads, expert_budget, "
                 "plugins_dirs, context, eviction, hotness_decay, hotness_margin, prefetch, async_compute, direct_io, io_threads, "
                 "activations, head, dense_bf16, pin_threads, speculate, draft_max, rank_timeout, rank_split)");
}

// The words of the command line's errors (engine_settings.hpp), with the key and the file where
// the option would be named.
TEST(EngineConfig, WrongTypeNamesTheKeyAndTheExpectedType) {
    EXPECT_EQ(error_of("threads: two\n"), "threads in test.yaml 'two': must be a positive integer or auto");
    EXPECT_EQ(error_of("threads: 0\n"), "threads in test.yaml 0: must be a positive integer or auto");
    EXPECT_EQ(error_of("context: -5\n"), "context in test.yaml -5: must be a positive integer or auto");
    EXPECT_EQ(error_of("context: [1]\n"), "context in test.yaml: must be a positive integer or auto, got a list");
    EXPECT_EQ(error_of("prefetch: maybe\n"), "prefetch in test.yaml 'maybe': must be a boolean (true or false)");
    EXPECT_EQ(error_of("kernels: [avx2]\n"), "kernels in test.yaml: must be a name (auto, reference or a plugin), got a list");
    EXPECT_EQ(error_of("family:\n"), "family in test.yaml: must be a name (auto or a model plugin), got no value");
    EXPECT_EQ(error_of("plugins_dirs: /opt/x\n"), "plugins_dirs in test.yaml: must be a list of directories, got '/opt/x'");
    EXPECT_EQ(error_of("eviction: fifo\n"), "eviction in test.yaml 'fifo': must be adaptive, hotness, lru or next-use");
    EXPECT_EQ(error_of("activations: int4\n"), "activations in test.yaml 'int4': must be f32 or int8");
    EXPECT_EQ(error_of("direct_io: {a: 1}\n"), "direct_io in test.yaml: must be a boolean (true or false), got a map");
    EXPECT_EQ(error_of("expert_budget: 8GB\n"),
              "expert_budget in test.yaml '8GB': unknown unit 'GB' (use KiB, MiB, GiB, TiB or K, M, G, T)");
}

TEST(EngineConfig, MalformedFiles) {
    EXPECT_EQ(error_of("kernels: avx2\nkernels: vnni\n"), "test.yaml: key 'kernels' appears twice");
    EXPECT_EQ(error_of("- kernels\n- avx2\n").rfind("test.yaml: an engine configuration must be a map", 0), 0u);
    const std::string m = error_of("kernels: [avx2\n");
    EXPECT_EQ(m.rfind("test.yaml:", 0), 0u) << m;
    EXPECT_NE(m.find("invalid YAML"), std::string::npos) << m;
}

TEST(EngineConfig, ASecondDocumentIsRefusedNamingTheFile) {
    EXPECT_EQ(error_of("kernels: avx2\n---\nkernels: vnni\n", "two.yaml"),
              "two.yaml: holds more than one YAML document (the second starts at line 2); an engine "
              "configuration is one document");
    EXPECT_EQ(error_of("---\ncontext: 8\n---\nthreads: 2\n---\n").rfind("test.yaml: holds more than one", 0), 0u);
    EXPECT_EQ(error_of("context: 8\n...\n---\nthreads: 2\n").rfind("test.yaml: holds more than one", 0), 0u);
    // One document, with or without its own '---' and '...' markers, is fine.
    for (const char* one : {"---\ncontext: 8\n", "context: 8\n...\n", "---\ncontext: 8\n...\n"}) {
        auto c = parse_engine_config(one, "one.yaml");
        ASSERT_TRUE(c) << one << ": " << c.error().message;
        EXPECT_EQ(c->context, 8);
    }
}

TEST(EngineConfig, AStrayCommaIsInvalidNotAnEmptyConfiguration) {
    // yaml-cpp reads nothing past it: YAML::Load gave an empty document (every default, the
    // file's keys ignored), and counting documents to the end would never finish.
    EXPECT_EQ(error_of(",\nkernels: avx2\n"), "test.yaml:1:1: invalid YAML: nothing can be read here");
    EXPECT_EQ(error_of("\n,\n"), "test.yaml:2:1: invalid YAML: nothing can be read here");
}

TEST(EngineConfig, ValuesInErrorsAreEscapedAndCut) {
    // Invalid UTF-8 and terminal escapes come back as \xNN; a long value (1 MiB here) as its first
    // 64 bytes and its length.
    EXPECT_EQ(error_of("eviction: \"a\\e[31m\\xff\"\n"),
              "eviction in test.yaml 'a\\x1b[31m\\xc3\\xbf': must be adaptive, hotness, lru or next-use");
    EXPECT_EQ(error_of("eviction: b\xff\xfe\n"), "eviction in test.yaml 'b\\xff\\xfe': must be adaptive, hotness, lru or next-use");
    const std::string huge(1 << 20, 'z');
    EXPECT_EQ(error_of("eviction: " + huge + "\n"),
              "eviction in test.yaml '" + std::string(64, 'z') + "... (1048576 bytes)': must be adaptive, hotness, lru or next-use");
    const std::string huge_key = error_of("? " + huge + "\n: 1\n");
    EXPECT_EQ(huge_key.substr(0, 40), "test.yaml: unknown key '" + std::string(16, 'z'));
    EXPECT_LT(huge_key.size(), 400u);
    EXPECT_EQ(error_of("k\x1b]0;t\x07: 1\n").rfind("test.yaml: unknown key 'k\\x1b]0;t\\x07'", 0), 0u);
    EXPECT_EQ(error_of("expert_budget: 8\xff" "B\n"),
              "expert_budget in test.yaml '8\\xffB': unknown unit '\\xffB' (use KiB, MiB, GiB, TiB or K, M, G, T)");
    // yaml-cpp's own message quotes the input too (an undefined anchor's name).
    const std::string anchor = error_of("context: *" + std::string(5000, 'q') + "\x01\n");
    EXPECT_LT(anchor.size(), 400u) << anchor;
}

TEST(EngineConfig, FileLoadingAndRelativePluginDirs) {
    auto missing = load_engine_config("/nonexistent/stormo.yaml");
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("/nonexistent/stormo.yaml"), std::string::npos);

    const fs::path dir = fs::temp_directory_path() / ("stormo-engine-config-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path file = dir / "engine.yaml";
    std::ofstream(file) << "plugins_dirs: [extra, /abs/dir]\ncontext: 77\n";
    auto c = load_engine_config(file.string());
    fs::remove_all(dir);
    ASSERT_TRUE(c) << c.error().message;
    // A relative directory is relative to the file that names it.
    EXPECT_EQ(c->plugins_dirs, (std::vector<std::string>{(dir / "extra").string(), "/abs/dir"}));
    EXPECT_EQ(c->context, 77);
}

TEST(EngineConfig, SizeParsing) {
    EXPECT_EQ(bytes_of("123"), 123u);
    EXPECT_EQ(bytes_of("0"), 0u);
    EXPECT_EQ(bytes_of("8GiB"), uint64_t{8} << 30);
    EXPECT_EQ(bytes_of("8G"), uint64_t{8} << 30);
    EXPECT_EQ(bytes_of("8g"), uint64_t{8} << 30);
    EXPECT_EQ(bytes_of("512MiB"), uint64_t{512} << 20);
    EXPECT_EQ(bytes_of("512 M"), uint64_t{512} << 20);
    EXPECT_EQ(bytes_of("4KiB"), 4096u);
    EXPECT_EQ(bytes_of("4k"), 4096u);
    EXPECT_EQ(bytes_of("2TiB"), uint64_t{2} << 40);
    EXPECT_EQ(bytes_of("1.5GiB"), uint64_t{3} << 29);
    EXPECT_EQ(bytes_of(" 100B "), 100u);
    auto all = parse_size("all", "--expert-budget");
    ASSERT_TRUE(all);
    EXPECT_EQ(all->kind, SizeSpec::Kind::all);
    auto automatic = parse_size("AUTO", "--expert-budget");
    ASSERT_TRUE(automatic);
    EXPECT_EQ(automatic->kind, SizeSpec::Kind::automatic);
}

TEST(EngineConfig, SizeErrorsNameTheOption) {
    EXPECT_EQ(size_error("8GB"), "--expert-budget '8GB': unknown unit 'GB' (use KiB, MiB, GiB, TiB or K, M, G, T)");
    EXPECT_EQ(size_error("lots"), "--expert-budget 'lots': not a size (bytes, or a number with KiB, MiB, GiB, TiB; or all, auto)");
    EXPECT_EQ(size_error(""), "--expert-budget '': not a size (bytes, or a number with KiB, MiB, GiB, TiB; or all, auto)");
    EXPECT_EQ(size_error("-1"), "--expert-budget '-1': not a size (bytes, or a number with KiB, MiB, GiB, TiB; or all, auto)");
    EXPECT_EQ(size_error("99999999999999999999"), "--expert-budget '99999999999999999999': the number is too large");
    EXPECT_EQ(size_error("20000000TiB"), "--expert-budget '20000000TiB': the size is too large");
}

TEST(EngineConfig, SizeErrorsEscapeAndCutTheValue) {
    EXPECT_EQ(size_error("8\x1b[2J"), "--expert-budget '8\\x1b[2J': unknown unit '\\x1b[2J' (use KiB, MiB, GiB, TiB or K, M, G, T)");
    EXPECT_EQ(size_error(std::string(1000, 'x')),
              "--expert-budget '" + std::string(64, 'x') +
                  "... (1000 bytes)': not a size (bytes, or a number with KiB, MiB, GiB, TiB; or all, auto)");
}

TEST(EngineConfig, SizeFormatting) {
    EXPECT_EQ(format_bytes(100), "100 B");
    EXPECT_EQ(format_bytes(uint64_t{3} << 29), "1.50 GiB");
    EXPECT_EQ(format_size(SizeSpec{SizeSpec::Kind::all, 0}), "all");
    EXPECT_EQ(format_size(SizeSpec{SizeSpec::Kind::bytes, 2048}), "2.00 KiB");
}

TEST(EngineConfig, ActivationRoadNames) {
    EXPECT_STREQ(activation_road_name(ActivationRoad::f32), "f32");
    EXPECT_STREQ(activation_road_name(ActivationRoad::int8), "int8");
    EXPECT_EQ(activation_road_from_name("INT8"), ActivationRoad::int8);
    EXPECT_EQ(activation_road_from_name("f32"), ActivationRoad::f32);
    EXPECT_FALSE(activation_road_from_name("bf16"));
    EXPECT_FALSE(activation_road_from_name(""));
    auto c = parse_engine_config("activations: F32\n", "road.yaml");
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->activations, ActivationRoad::f32);
    EXPECT_EQ(c->origin("activations"), "activations in road.yaml");
}
