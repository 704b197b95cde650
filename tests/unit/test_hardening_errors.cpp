// Errors name the input at fault: bad input never ends in "internal error: std::bad_alloc" or a
// standard-library message, and bytes from files are escaped before they reach the terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"
#include "util/quote.hpp"

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
    EXPECT_EQ(stormo::printable(std::string(100, 'x'), 4), "xxxx...");
    EXPECT_EQ(stormo::in_quotes("model.norm.weight"), "\"model.norm.weight\"");
    EXPECT_EQ(stormo::in_quotes("bad\x07name"), "\"bad\\x07name\"");
}
