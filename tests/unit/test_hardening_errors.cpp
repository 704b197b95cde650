// Errors name the input at fault: bad input never ends in "internal error: std::bad_alloc" or a
// standard-library message, and bytes from files are escaped before they reach the terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"
#include "stormo/quote.hpp"

namespace fs = std::filesystem;

namespace {

using stormo::test::CommandResult;
using stormo::test::run_command;
using stormo::test::TempDir;

const std::string kDemo = std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo";

// Under a 2 GiB address-space limit: an allocation sized by bad input fails fast instead of
// swapping (and would surface as bad_alloc if unchecked).
CommandResult run_bounded(const std::string& args) {
    return run_command("sh -c \"ulimit -v 2097152; exec timeout 20 '" + std::string(STORMO_CLI) + "' " + args + "\"");
}

bool has_control_bytes(const std::string& s) {
    for (size_t i = 0; i + 1 < s.size(); ++i)  // the final newline is the line's end
        if (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7f) return true;
    return false;
}

}  // namespace

TEST(HardeningErrors, BadInputNamesTheInputNeverTheLibrary) {
    TempDir dir;
    std::ofstream(dir.file("trace")) << "0 1\n";
    for (const std::string& args :
         {"generate --model " + kDemo + " --ids 1,2 --max-tokens 1000000000000000000",
          "generate --model " + kDemo + " --ids 1,2 --context 1000000000000",
          "bench --model " + kDemo + " --prompt-tokens 100000000000 --ram-probe 1MiB --disk-probe 1MiB",
          "cache-sim --trace " + dir.file("trace") + " --slots 18446744073709551615",
          "cache-sim --trace " + dir.file("trace") + " --slots -1",
          "logits --model " + kDemo + " --ids-file /dev/zero --out " + dir.file("l.npy")}) {
        const CommandResult r = run_bounded(args);
        EXPECT_NE(r.status, 0) << args;
        EXPECT_NE(r.status, 124) << args << ": timed out";
        for (const char* bad : {"internal error", "bad_alloc", "max_size", "std::"})
            EXPECT_EQ(r.err.find(bad), std::string::npos) << args << "\n" << r.err;
        EXPECT_NE(r.err.find("--"), std::string::npos) << "names no option: " << r.err;
    }
}

TEST(HardeningErrors, BytesFromFilesAreEscaped) {
    TempDir dir;
    std::ofstream(dir.file("ids")) << "1 \x1b[2J 3";
    const CommandResult ids = run_bounded("generate --model " + kDemo + " --ids-file " + dir.file("ids"));
    EXPECT_NE(ids.status, 0);
    EXPECT_NE(ids.err.find("\"\\x1b[2J\" is not a token id"), std::string::npos) << ids.err;
    EXPECT_FALSE(has_control_bytes(ids.err)) << ids.err;

    // A config.json whose architecture names carry terminal escapes.
    fs::create_symlink(kDemo + "/model.safetensors", dir.file("model.safetensors"));
    std::ifstream in(kDemo + "/config.json");
    std::string config(std::istreambuf_iterator<char>(in), {});
    const std::string arch = "\"GptOssForCausalLM\"";
    config.replace(config.find(arch), arch.size(), "\"Evil\\u001b]0;title\\u0007Model\"");
    const std::string type = "\"model_type\": \"gpt_oss\"";
    ASSERT_NE(config.find(type), std::string::npos);
    config.replace(config.find(type), type.size(), "\"model_type\": \"evil\\u001b[31m\"");
    std::ofstream(dir.file("config.json")) << config;
    const CommandResult arch_err = run_bounded("inspect --model " + dir.path());
    EXPECT_NE(arch_err.status, 0);
    EXPECT_FALSE(has_control_bytes(arch_err.err)) << arch_err.err;
    EXPECT_NE(arch_err.err.find("\\x1b"), std::string::npos) << arch_err.err;
}

TEST(HardeningErrors, PrintableAndInQuotes) {
    EXPECT_EQ(stormo::printable("a\x1b[1mb\n\xc3\xa9"), "a\\x1b[1mb\\x0a\\xc3\\xa9");
    EXPECT_EQ(stormo::printable(std::string(100, 'x'), 4), "xxxx... (100 bytes)");
    EXPECT_EQ(stormo::in_quotes("model.norm.weight"), "\"model.norm.weight\"");
    EXPECT_EQ(stormo::in_quotes("bad\x07name"), "\"bad\\x07name\"");
}

TEST(HardeningErrors, CommandLineValuesAreEscapedAndCut) {
    const std::string generate = "generate --model " + kDemo + " --ids 1 ";
    // A value echoed by stormo's own check, by boost's parser, by the plugin selection (raw bytes
    // in single quotes: sh passes them through).
    const CommandResult head = run_bounded(generate + "--head '\xff\x1b[31m'");
    EXPECT_NE(head.err.find("--head '\\xff\\x1b[31m': must be bounded or exact-only"), std::string::npos) << head.err;
    const CommandResult threads = run_bounded(generate + "--threads " + std::string(100000, '9') + "x");
    EXPECT_NE(threads.status, 0);
    EXPECT_NE(threads.err.find("... (100001 bytes)"), std::string::npos) << threads.err.substr(0, 300);
    EXPECT_LT(threads.err.size(), 400u);
    const CommandResult kernels = run_bounded(generate + "--kernels 'k\xc3('");
    EXPECT_NE(kernels.err.find("--kernels k\\xc3(: no such kernels plugin"), std::string::npos) << kernels.err;
    const CommandResult stray = run_bounded(generate + "'stray\x9b" "2J'");
    EXPECT_NE(stray.err.find("unexpected argument 'stray\\x9b2J'"), std::string::npos) << stray.err;
    // The last line of defence: a path is shown as given when it is valid UTF-8, escaped where not.
    const CommandResult path = run_bounded("inspect --model '/nonexistent/d\xc3\xa9j\xe0/\xc2\x9b'");
    EXPECT_NE(path.status, 0);
    EXPECT_NE(path.err.find("/nonexistent/d\xc3\xa9j\\xe0/\\xc2\\x9b"), std::string::npos) << path.err;
    for (const CommandResult* r : {&head, &threads, &kernels, &stray, &path}) {
        EXPECT_FALSE(has_control_bytes(r->err)) << r->err.substr(0, 300);
        EXPECT_EQ(r->err.find_first_of("\xff\x9b\xe0"), std::string::npos) << "raw invalid UTF-8: " << r->err.substr(0, 300);
    }
}

TEST(HardeningErrors, OptionsBoostWouldAcceptAreRefused) {
    const std::string generate = "generate --model " + kDemo + " --ids 1 --max-tokens 1 ";
    const CommandResult seed = run_bounded(generate + "--temperature 1 --seed -1");
    EXPECT_EQ(seed.status, 2);
    EXPECT_NE(seed.err.find("the argument ('-1') for option '--seed' is invalid"), std::string::npos) << seed.err;
    EXPECT_EQ(seed.out, "");
    const CommandResult synth_seed = run_bounded("synth --preset gpt-oss-tiny --dry-run --seed +5");
    EXPECT_EQ(synth_seed.status, 2) << synth_seed.err;
    const CommandResult alone = run_bounded(generate + "--dump-position 0");
    EXPECT_EQ(alone.status, 2);
    EXPECT_NE(alone.err.find("--dump-position needs --dump DIR"), std::string::npos) << alone.err;
    TempDir dir;
    const CommandResult negative = run_bounded(generate + "--dump " + dir.file("d") + " --dump-position -7");
    EXPECT_EQ(negative.status, 2);
    EXPECT_NE(negative.err.find("--dump-position -7: must be >= 0"), std::string::npos) << negative.err;
    EXPECT_FALSE(fs::exists(dir.file("d")));
}

TEST(HardeningErrors, AHugeNameInConfigJsonIsCut) {
    TempDir dir;
    fs::create_symlink(kDemo + "/model.safetensors", dir.file("model.safetensors"));
    std::ifstream in(kDemo + "/config.json");
    std::string config(std::istreambuf_iterator<char>(in), {});
    for (const std::string& field : {std::string("\"GptOssForCausalLM\""), std::string("\"gpt_oss\"")}) {
        ASSERT_NE(config.find(field), std::string::npos) << field;
        config.replace(config.find(field), field.size(), "\"" + std::string(1 << 20, 'm') + "\"");
    }
    std::ofstream(dir.file("config.json")) << config;
    const CommandResult r = run_bounded("inspect --model " + dir.path());
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("model_type '" + std::string(64, 'm') + "... (1048576 bytes)'"), std::string::npos)
        << r.err.substr(0, 400);
    EXPECT_LT(r.err.size(), 1000u);
}
