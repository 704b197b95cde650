// The one table of engine settings walked row by row: each key set with its command-line option
// (parsed as `stormo` parses it) and with its YAML key gives the same EngineOptions, a bad value
// gives the same error both ways but for where it came from, and the table's defaults are
// EngineConfig's and configs/default.yaml's.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "runtime/engine.hpp"
#include "runtime/engine_settings.hpp"

using namespace stormo;

namespace {

// A value each key takes that is not its default, and one it refuses. A key added to the table
// without its pair here fails EveryKeyHasSamples.
struct Samples {
    std::string good;
    std::string bad;
};
const std::map<std::string, Samples, std::less<>> kSamples{
    {"kernels", {"reference", ""}},
    {"family", {"qwen3_moe", ""}},
    {"threads", {"3", "many"}},
    {"expert_budget", {"8GiB", "8GB"}},
    {"plugins_dirs", {"/opt/stormo-plugins", ""}},
    {"context", {"1024", "-5"}},
    {"eviction", {"lru", "fifo"}},
    {"hotness_decay", {"0.8", "1.5"}},
    {"hotness_margin", {"off", "-1"}},
    {"prefetch", {"false", "maybe"}},
    {"async_compute", {"false", "sometimes"}},
    {"direct_io", {"false", "2"}},
    {"io_threads", {"8", "0"}},
    {"activations", {"int8", "int4"}},
    {"head", {"exact-only", "sometimes"}},
    {"dense_bf16", {"plain", "zipped"}},
    {"pin_threads", {"true", "maybe"}},
    {"speculate", {"auto", "sometimes"}},
    {"draft_max", {"4", "0"}},
    {"rank_timeout", {"5", "0"}},
    {"rank_split", {"weighted", "uneven"}},
};

// Every value an engine is opened with, except where each came from (which names the source).
std::string values_of(const EngineOptions& o) {
    std::ostringstream out;
    out << "kernels=" << o.setup.kernels.value << " family=" << o.setup.family.value << " dirs=";
    for (const PluginDir& d : o.setup.search.extra) out << d.path << (d.required ? "(required)," : ",");
    out << " threads=" << o.threads << " pin=" << o.pin_threads << " budget=" << format_size(o.expert_budget)
        << " eviction=" << static_cast<int>(o.eviction.policy) << " decay=" << o.eviction.decay << " margin=" << o.eviction.margin
        << " direct_io=" << o.direct_io << " io_threads=" << o.io_threads << " prefetch=" << o.pipeline.prefetch
        << " async=" << o.pipeline.async_compute << " context=" << o.context
        << " activations=" << activation_road_name(o.activations) << " head=" << head_read_name(o.head)
        << " dense_bf16=" << dense_bf16_name(o.dense_bf16) << " speculate=" << speculate_mode_name(o.speculation.mode)
        << " draft_max=" << o.speculation.draft_max << " rank_timeout=" << o.rank_timeout_seconds
        << " rank_split=" << rank_split_name(o.rank_split);
    return out.str();
}

// `stormo inspect --<flag> <value>`, parsed and resolved as the command does.
Expected<EngineConfig> from_command_line(const EngineSetting& s, const std::string& value) {
    cli::CommonOptions common;
    boost::program_options::options_description d;
    d.add(cli::common_options(common));
    std::vector<std::string> words{"inspect", "--" + std::string(s.flag), value};
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    STORMO_TRY_ASSIGN(auto parsed, cli::parse_command_line(static_cast<int>(argv.size()), argv.data(), "inspect", "",
                                                           "", d));
    EXPECT_EQ(parsed, cli::ParseResult::run);
    return cli::resolve_engine_config(common);
}

// The same value as the key of a YAML file.
Expected<EngineConfig> from_yaml(const EngineSetting& s, const std::string& value) {
    std::string quoted = "'";
    for (char c : value) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    quoted += "'";
    const std::string text = s.form == EngineSetting::Form::list ? "[" + quoted + "]" : quoted;
    return parse_engine_config(std::string(s.key) + ": " + text + "\n", "t.yaml");
}

}  // namespace

TEST(EngineSettings, EveryKeyHasSamples) {
    std::vector<std::string> keys;
    for (const EngineSetting& s : engine_settings()) {
        keys.emplace_back(s.key);
        EXPECT_TRUE(kSamples.count(s.key)) << s.key << " has no samples in this test";
        EXPECT_FALSE(s.flag.empty()) << s.key << " has no command-line option";
        EXPECT_FALSE(s.help.empty()) << s.key;
    }
    EXPECT_EQ(keys, engine_config_keys());
    EXPECT_EQ(kSamples.size(), keys.size());
}

TEST(EngineSettings, EachKeySetBothWaysGivesTheSameEngineOptions) {
    const std::string defaults = values_of(engine_options(default_engine_config()));
    for (const EngineSetting& s : engine_settings()) {
        const Samples& sample = kSamples.at(std::string(s.key));
        auto cli = from_command_line(s, sample.good);
        auto yaml = from_yaml(s, sample.good);
        ASSERT_TRUE(cli) << s.key << ": " << cli.error().message;
        ASSERT_TRUE(yaml) << s.key << ": " << yaml.error().message;
        const std::string by_cli = values_of(engine_options(*cli));
        EXPECT_EQ(by_cli, values_of(engine_options(*yaml))) << s.key;
        EXPECT_NE(by_cli, defaults) << s.key << " = " << sample.good << " changed nothing";
        EXPECT_EQ(cli->origin(s.key), "--" + std::string(s.flag));
        EXPECT_EQ(yaml->origin(s.key), std::string(s.key) + " in t.yaml");
    }
}

TEST(EngineSettings, ABadValueGivesTheSameErrorBothWays) {
    for (const EngineSetting& s : engine_settings()) {
        const Samples& sample = kSamples.at(std::string(s.key));
        auto cli = from_command_line(s, sample.bad);
        auto yaml = from_yaml(s, sample.bad);
        ASSERT_FALSE(cli) << s.key << " accepted " << sample.bad << " on the command line";
        ASSERT_FALSE(yaml) << s.key << " accepted " << sample.bad << " in a file";
        const std::string flag = "--" + std::string(s.flag) + " ";
        const std::string key = std::string(s.key) + " in t.yaml ";
        ASSERT_EQ(cli.error().message.rfind(flag, 0), 0u) << cli.error().message;
        ASSERT_EQ(yaml.error().message.rfind(key, 0), 0u) << yaml.error().message;
        EXPECT_EQ(cli.error().message.substr(flag.size()), yaml.error().message.substr(key.size())) << s.key;
        // A command line that is wrong is a usage error (exit status 2); a file, a configuration one.
        EXPECT_EQ(cli.error().kind, ErrorKind::invalid_argument) << s.key;
        EXPECT_EQ(yaml.error().kind, ErrorKind::config) << s.key;
    }
}

TEST(EngineSettings, TheTableDefaultsAreTheConfigurationDefaults) {
    const std::string defaults = values_of(engine_options(default_engine_config()));
    for (const EngineSetting& s : engine_settings()) {
        EngineConfig c = default_engine_config();
        if (s.form == EngineSetting::Form::one) {
            ASSERT_TRUE(apply_setting(c, s, s.default_text, SettingSource{"test"})) << s.key;
        } else {
            EXPECT_EQ(s.default_text, "[]") << s.key;
        }
        EXPECT_EQ(values_of(engine_options(c)), defaults) << s.key << ": " << s.default_text;
    }
}

TEST(EngineSettings, CommandLineOptionsOverTheFile) {
    auto file = parse_engine_config("threads: 2\nplugins_dirs: [/from/file]\nhead: exact-only\n", "t.yaml");
    ASSERT_TRUE(file) << file.error().message;
    EngineConfig c = *file;
    ASSERT_TRUE(apply_setting(c, *find_engine_setting("threads"), "5", SettingSource{"--threads"}));
    ASSERT_TRUE(apply_setting(c, *find_engine_setting("plugins_dirs"), "/from/cli", SettingSource{"--plugins-dir"}));
    const EngineOptions o = engine_options(c);
    EXPECT_EQ(o.threads, 5u);
    EXPECT_EQ(o.head, HeadRead::exact_only);
    // A repeated --plugins-dir adds to the file's directories, searched after them.
    ASSERT_EQ(o.setup.search.extra.size(), 2u);
    EXPECT_EQ(o.setup.search.extra[0].path, "/from/file");
    EXPECT_EQ(o.setup.search.extra[0].origin, "plugins_dirs in t.yaml");
    EXPECT_EQ(o.setup.search.extra[1].path, "/from/cli");
    EXPECT_EQ(o.setup.search.extra[1].origin, "--plugins-dir");
    // `auto` is a value on the command line too, as in a file.
    ASSERT_TRUE(apply_setting(c, *find_engine_setting("threads"), "auto", SettingSource{"--threads"}));
    EXPECT_EQ(engine_options(c).threads, 0u);
}
