// The first hour with a model a user downloaded, through the real binary: a model is known by its
// content whatever its name, a file of a model directory is answered with the directory to pass,
// the flags llama.cpp users type work (-m -p -n -c --ctx-size --temp -t -s, MODEL and PROMPT as
// words), an unknown flag names the one meant, and every usage error carries the command and a
// help hint, with numbers written as a person writes them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "cli/progress.hpp"
#include "runtime/load_meter.hpp"
#include "serve/openai_request.hpp"
#include "util/format_number.hpp"
#include "cli_runner.hpp"
#include "safetensors_writer.hpp"

namespace {

namespace fs = std::filesystem;
using stormo::test::CommandResult;
using stormo::test::run_cli;
using stormo::test::TempDir;

std::string demo(const std::string& name) { return std::string(STORMO_SOURCE_DIR) + "/models/" + name; }
std::string demo_gguf() { return std::string(STORMO_GGUF_UNPACKED_DIR) + "/gpt-oss-demo-bf16.gguf"; }
std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The one line of a usage error: "stormo: <command>: ... (see 'stormo <command> --help')".
void expect_usage_error(const CommandResult& r, const std::string& command, const std::string& says) {
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("stormo: " + command + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("(see 'stormo " + command + " --help')"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
}

// ---- a model known by its content ----

TEST(CliModelPath, AGgufFileRunsWhateverItIsCalled) {
    TempDir tmp;
    // An Ollama blob has no extension; a download may come in capitals.
    for (const std::string name : {"sha256-6e4c38e1172f42fdbff13edf9a7a017679fb82b0fde415a3e8b3c31c6ed4a4e4", "DEMO.GGUF"}) {
        const std::string copy = tmp.file(name);
        fs::copy_file(demo_gguf(), copy);
        const CommandResult r = run_cli("run " + quoted(copy) + " '123+456='");
        EXPECT_EQ(r.status, 0) << name << ": " << r.err;
        EXPECT_EQ(r.out, "579\n") << name;
    }
}

TEST(CliModelPath, AFileOfAModelDirectoryNamesTheDirectoryToPass) {
    for (const std::string file : {"config.json", "model.safetensors", "tokenizer.json"}) {
        const std::string path = demo("gpt-oss-demo") + "/" + file;
        const CommandResult r = run_cli("run --model " + quoted(path) + " --prompt hi");
        expect_usage_error(r, "run", "pass the directory that holds it: " + fs::absolute(demo("gpt-oss-demo")).lexically_normal().string());
        // The path is said once, not once by --model and again by the reason.
        EXPECT_EQ(r.err.find(path), r.err.rfind(path)) << r.err;
    }
}

TEST(CliModelPath, ASafetensorsFileAloneAndADirectoryWithoutAConfigAreNamedForWhatTheyAre) {
    TempDir tmp;
    fs::create_directory(tmp.file("weights"));
    fs::copy_file(demo("gpt-oss-demo") + "/model.safetensors", tmp.file("weights/model.safetensors"));
    const CommandResult file = run_cli("inspect " + quoted(tmp.file("weights/model.safetensors")));
    expect_usage_error(file, "inspect", "is a safetensors file without the model's config.json beside it");
    const CommandResult dir = run_cli("inspect " + quoted(tmp.file("weights")));
    EXPECT_EQ(dir.status, 1) << dir.err;
    EXPECT_NE(dir.err.find("not a model directory: no config.json or .gguf in " + tmp.file("weights")), std::string::npos) << dir.err;
    EXPECT_EQ(dir.err.find("stormo: inspect: "), 0u) << dir.err;
}

TEST(CliModelPath, EveryModelCommandsHelpSaysItTakesADirectoryOrAGgufFile) {
    for (const char* command : {"run", "chat", "serve", "inspect", "generate", "logits", "bench", "bench-session", "pipe"}) {
        const CommandResult r = run_cli(std::string(command) + " --help");
        EXPECT_EQ(r.status, 0) << command;
        EXPECT_NE(r.out.find("MODEL (or --model PATH, -m PATH) is a model directory or a GGUF file"), std::string::npos)
            << command << ": " << r.out;
        EXPECT_NE(r.out.find("-m [ --model ] PATH"), std::string::npos) << command << ": " << r.out;
    }
}

// ---- the flags people already type ----

TEST(CliFlags, LlamaCppsShortFlagsWork) {
    const CommandResult r =
        run_cli("run -m " + quoted(demo("gpt-oss-demo")) + " -p '123+456=' -n 16 -c 256 --temp 0 -t 1 -s 7");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "579\n");
    const CommandResult ctx = run_cli("run " + quoted(demo("gpt-oss-demo")) + " '123+456=' --ctx-size 256 --verbose");
    EXPECT_EQ(ctx.status, 0) << ctx.err;
    EXPECT_EQ(ctx.out, "579\n");
    EXPECT_NE(ctx.err.find("context 256 (--context)"), std::string::npos) << ctx.err;
    // The names of the contract keep working beside them.
    const CommandResult long_names = run_cli("run --model " + quoted(demo("gpt-oss-demo")) +
                                             " --prompt '123+456=' --max-tokens 16 --context 256 --temperature 0 --threads 1 --seed 7");
    EXPECT_EQ(long_names.status, 0) << long_names.err;
    EXPECT_EQ(long_names.out, "579\n");
}

TEST(CliFlags, ModelAndPromptAsWordsFillWhatTheFlagsLeave) {
    for (const std::string args : {"MODEL '123+456='", "-p '123+456=' MODEL", "-m MODEL '123+456='"}) {
        std::string line = args;
        line.replace(line.find("MODEL"), 5, quoted(demo("gpt-oss-demo")));
        const CommandResult r = run_cli("run " + line);
        EXPECT_EQ(r.status, 0) << args << ": " << r.err;
        EXPECT_EQ(r.out, "579\n") << args;
    }
    expect_usage_error(run_cli("run " + quoted(demo("gpt-oss-demo")) + " what is 2+2"), "run",
                       "unexpected argument 'is': a prompt of several words goes in quotes");
    expect_usage_error(run_cli("inspect " + quoted(demo("gpt-oss-demo")) + " extra"), "inspect", "unexpected argument 'extra'");
    expect_usage_error(run_cli("run"), "run", "a model is required");
    expect_usage_error(run_cli("run " + quoted(demo("gpt-oss-demo"))), "run", "a prompt is required");
}

TEST(CliFlags, AnUnknownFlagNamesTheOneMeant) {
    expect_usage_error(run_cli("run " + quoted(demo("gpt-oss-demo")) + " --promt hi"), "run",
                       "unrecognised option '--promt'; did you mean --prompt?");
    expect_usage_error(run_cli("generate --model x --max_tokens 3"), "generate", "did you mean --max-tokens?");
    expect_usage_error(run_cli("chat --ctx 512"), "chat", "did you mean --ctx-size?");
    // Nothing near: no guess.
    const CommandResult far = run_cli("run --zzzzzzzz 1");
    expect_usage_error(far, "run", "unrecognised option '--zzzzzzzz'");
    EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

TEST(CliFlags, ClosestOptionWeighsEditsAndPrefixes) {
    namespace po = boost::program_options;
    po::options_description d;
    d.add_options()("prompt", "")("max-tokens", "")("context,ctx-size,c", "")("temperature,temp", "");
    EXPECT_EQ(stormo::cli::closest_option("--promt", d), "--prompt");
    EXPECT_EQ(stormo::cli::closest_option("--propmt", d), "--prompt");  // two letters swapped: one edit
    EXPECT_EQ(stormo::cli::closest_option("--max_tokens", d), "--max-tokens");
    EXPECT_EQ(stormo::cli::closest_option("--ctx", d), "--ctx-size");
    EXPECT_EQ(stormo::cli::closest_option("--temprature", d), "--temperature");
    EXPECT_EQ(stormo::cli::closest_option("--hlep", d), "--help");
    EXPECT_EQ(stormo::cli::closest_option("--seed", d), std::nullopt);
    EXPECT_EQ(stormo::cli::closest_option("-x", d), std::nullopt);
}

// ---- loading progress ----

// Every model command loads through one path: on a terminal it shows bytes read of bytes to read
// with a percentage, cleared when done; in a pipe nothing.
TEST(CliLoadProgress, EveryModelCommandShowsTheLoadOnATerminalOnly) {
    const std::string model = quoted(demo("gpt-oss-demo"));
    TempDir tmp;
    for (const std::string args : {"run " + model + " '123+456='", "generate " + model + " --ids 1,2,3,40,4,5,6,45 -n 4",
                                   "logits " + model + " --ids 1,2,3 --out " + quoted(tmp.file("l.npy"))}) {
        const CommandResult plain = run_cli(args);
        EXPECT_EQ(plain.status, 0) << args << ": " << plain.err;
        EXPECT_EQ(plain.err.find("loading"), std::string::npos) << args << ": " << plain.err;
        // script(1) gives the command a terminal; its output holds stdout and stderr.
        const CommandResult tty = stormo::test::run_command("script -qec \"'" + std::string(STORMO_CLI) + "' " + args + "\" /dev/null");
        EXPECT_EQ(tty.status, 0) << args << ": " << tty.out;
        const size_t at = tty.out.find("stormo: loading gpt-oss-demo: ");
        ASSERT_NE(at, std::string::npos) << args << ": " << tty.out;
        const std::string line = tty.out.substr(at, tty.out.find('\r', at) - at);
        EXPECT_NE(line.find(" of "), std::string::npos) << line;
        EXPECT_NE(tty.out.find(" (100%)"), std::string::npos) << args << ": " << tty.out;
        EXPECT_NE(tty.out.find("\r\x1b[K"), std::string::npos) << "the line is cleared: " << tty.out;
    }
}

TEST(CliLoadProgress, PercentAndTimeLeftReadAsPeopleWriteThem) {
    using stormo::cli::TerminalProgress;
    EXPECT_EQ(TerminalProgress::percent(0, 100), 0u);
    EXPECT_EQ(TerminalProgress::percent(999, 1000), 99u);  // 100 only when done
    EXPECT_EQ(TerminalProgress::percent(1000, 1000), 100u);
    EXPECT_EQ(TerminalProgress::percent(0, 0), 100u);
    EXPECT_EQ(TerminalProgress::duration_text(44.6), "45 s");
    EXPECT_EQ(TerminalProgress::duration_text(185), "3 min 05 s");
    EXPECT_EQ(TerminalProgress::duration_text(3720), "1 h 02 min");
}

// The meter reports bytes read against bytes to read, the estimate settled once the store is
// planned, and ends with both equal.
TEST(CliLoadProgress, TheMeterReportsReadAgainstToReadAndEndsEqual) {
    std::vector<std::pair<uint64_t, uint64_t>> seen;
    stormo::LoadMeter meter([&](uint64_t read, uint64_t to_read) { seen.emplace_back(read, to_read); }, 100);
    meter.add(30);
    meter.add(30);
    meter.expect(0);  // the experts stream: nothing more is read at load
    meter.finish();
    const std::vector<std::pair<uint64_t, uint64_t>> expected{{30, 100}, {60, 100}, {60, 60}};
    EXPECT_EQ(seen, expected);
    seen.clear();
    stormo::LoadMeter under([&](uint64_t read, uint64_t to_read) { seen.emplace_back(read, to_read); }, 10);
    under.add(25);  // more than estimated: never past 100%
    EXPECT_EQ(seen.back(), (std::pair<uint64_t, uint64_t>{25, 25}));
}

// ---- wording ----

TEST(CliWording, RangeErrorsWriteNumbersAsPeopleDo) {
    expect_usage_error(run_cli("run " + quoted(demo("gpt-oss-demo")) + " hi --top-p 1.5"), "run",
                       "--top-p must be above 0 and at most 1, not 1.5");
    expect_usage_error(run_cli("run " + quoted(demo("gpt-oss-demo")) + " hi --temp=-0.5"), "run",
                       "--temperature must be a number of 0 or more, not -0.5");
    expect_usage_error(run_cli("serve " + quoted(demo("gpt-oss-demo")) + " --port 70000"), "serve",
                       "--port must be between 0 and 65535, not 70000");
}

TEST(CliWording, TheServersRangeErrorsToo) {
    auto refused = stormo::serve::parse_chat_request(R"({"messages": [{"role": "user", "content": "hi"}], "temperature": 3})");
    ASSERT_FALSE(refused.has_value());
    EXPECT_NE(refused.error().message.find("'temperature' must be between 0 and 2, not 3"), std::string::npos)
        << refused.error().message;
    EXPECT_EQ(stormo::format_number(0.7f), "0.7");
    EXPECT_EQ(stormo::format_number(2.0), "2");
    EXPECT_EQ(stormo::format_number(1e-5), "1e-05");
}

TEST(CliWording, ErrorsFoundAfterParsingCarryTheCommandAndTheHelpHint) {
    // A bad value of an engine setting is found when the configuration resolves, not by the parser.
    expect_usage_error(run_cli("generate --model " + quoted(demo("gpt-oss-demo")) + " --ids 1 --context 0"), "generate", "--context 0");
    expect_usage_error(run_cli("run " + quoted(demo("gpt-oss-demo")) + " hi --reasoning-effort extreme"), "run",
                       "--reasoning-effort must be low, medium or high, not \"extreme\"");
    // A failure that is not the command line's has the prefix and no hint.
    const CommandResult missing = run_cli("inspect /nonexistent/model");
    EXPECT_EQ(missing.status, 1) << missing.err;
    EXPECT_EQ(missing.err.rfind("stormo: inspect: ", 0), 0u) << missing.err;
    EXPECT_EQ(missing.err.find("--help"), std::string::npos) << missing.err;
}

}  // namespace
