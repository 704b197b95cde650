// Defaults and docs that agree with the program: the one context rule (documented, in --help, in
// the errors), every YAML key in configs/README.md, docs pointing only inside the repository, and
// progress on stderr for long prefills when stderr is a terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "cli_runner.hpp"
#include "runtime/engine_config.hpp"

namespace fs = std::filesystem;

namespace {

using stormo::test::CommandResult;
using stormo::test::run_cli;
using stormo::test::run_command;
using stormo::test::slurp;

const std::string kSource = STORMO_SOURCE_DIR;
const std::string kDemo = kSource + "/models/gpt-oss-demo";

}  // namespace

TEST(HardeningDocs, ConfigsReadmeListsEveryKey) {
    const std::string readme = slurp(kSource + "/configs/README.md");
    const std::string yaml = slurp(kSource + "/configs/default.yaml");
    for (const std::string& key : stormo::engine_config_keys()) {
        EXPECT_NE(readme.find("| `" + key + "` |"), std::string::npos) << key << " missing from configs/README.md";
        EXPECT_NE(yaml.find("\n" + key + ": "), std::string::npos) << key << " missing from configs/default.yaml";
    }
}

TEST(HardeningDocs, OneContextRule) {
    // The shipped defaults leave the context to the run: it is not a given context.
    auto defaults = stormo::load_engine_config(kSource + "/configs/default.yaml");
    ASSERT_TRUE(defaults) << defaults.error().message;
    EXPECT_EQ(defaults->origins.count("context"), 0u);
    const CommandResult help = run_cli("generate --help");
    EXPECT_NE(help.out.find("the prompt + --max-tokens"), std::string::npos) << help.out;
    for (const char* doc : {"/docs/cli.md", "/configs/README.md", "/configs/default.yaml"})
        EXPECT_NE(slurp(kSource + doc).find("--max-tokens"), std::string::npos) << doc;
    // A given context too small for prompt + max tokens says what to do.
    const CommandResult small = run_cli("generate --model " + kDemo + " --ids 1,2,3,40 --context 10 --max-tokens 12");
    EXPECT_NE(small.status, 0);
    EXPECT_NE(small.err.find("--context 10: the prompt's 4 tokens + --max-tokens 12 need 16 positions; give a context of "
                             "at least 16 or fewer --max-tokens"),
              std::string::npos)
        << small.err;
    // Without --context the run's need is the context (and `context: auto` in a file means the same).
    const CommandResult fits = run_cli("generate --model " + kDemo + " --ids 1,2,3,40,4,5,6,45 --max-tokens 12 --config " +
                                       kSource + "/configs/default.yaml");
    EXPECT_EQ(fits.status, 0) << fits.err;
    EXPECT_EQ(fits.out, "5\n7\n9\n48\n");
}

TEST(HardeningDocs, DocsPointInsideTheRepository) {
    const std::regex path_ref("`((docs|configs|scripts|models|plugins|host|tests)/[A-Za-z0-9_./-]+)`");
    for (const char* doc : {"/README.md", "/docs/cli.md", "/configs/README.md", "/docs/plugins.md", "/docs/getting-started.md"}) {
        const std::string text = slurp(kSource + doc);
        EXPECT_EQ(text.find("](../"), std::string::npos) << doc;  // no link leaves the repository
        for (std::sregex_iterator it(text.begin(), text.end(), path_ref), end; it != end; ++it) {
            std::string path = (*it)[1];
            while (!path.empty() && (path.back() == '.' || path.back() == '/')) path.pop_back();
            if (path.find('*') != std::string::npos || path.find('<') != std::string::npos) continue;
            EXPECT_TRUE(fs::exists(kSource + "/" + path)) << doc << " names " << path;
        }
    }
}

TEST(HardeningDocs, LongPrefillShowsProgressOnATerminalOnly) {
    std::string ids;
    for (int i = 0; i < 300; ++i) {
        if (i) ids += ',';
        ids += std::to_string(i % 40);
    }
    const std::string args = "generate --model " + kDemo + " --ids " + ids + " --max-tokens 2";
    const CommandResult plain = run_cli(args);
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(plain.err.find("prefill"), std::string::npos) << plain.err;
    // script(1) gives the command a terminal; its output holds stdout and stderr.
    const CommandResult tty =
        run_command("script -qec \"'" + std::string(STORMO_CLI) + "' " + args + "\" /dev/null");
    EXPECT_EQ(tty.status, 0) << tty.out;
    EXPECT_NE(tty.out.find("stormo: prefill 300/300"), std::string::npos) << tty.out;
}

TEST(HardeningDocs, BenchShowsProgressOnATerminal) {
    const std::string args = "bench --model " + kDemo + " --ram-probe 1MiB --disk-probe 1MiB --prompt-tokens 8 --gen-tokens 4";
    const CommandResult plain = run_cli(args);
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(plain.err.find("decode"), std::string::npos) << plain.err;
    const CommandResult tty = run_command("script -qec \"'" + std::string(STORMO_CLI) + "' " + args + "\" /dev/null");
    EXPECT_EQ(tty.status, 0) << tty.out;
    for (const char* step : {"stormo: measuring the RAM read bandwidth...", "stormo: loading gpt-oss-demo: ",
                             "stormo: prefill 8/8", "stormo: decode 4/4"})
        EXPECT_NE(tty.out.find(step), std::string::npos) << step << "\n" << tty.out;
}
