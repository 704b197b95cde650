// Inputs that must not grow memory without bound or hang: every file stormo reads is a regular
// file of bounded size (a FIFO, a directory or /dev/zero is refused at once, naming the option),
// route traces and slot counts are validated, thread counts are capped.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cli_runner.hpp"
#include "runtime/engine_config.hpp"
#include "store/route_trace.hpp"
#include "util/file.hpp"

namespace fs = std::filesystem;

namespace {

using stormo::test::CommandResult;
using stormo::test::run_command;
using stormo::test::TempDir;

const std::string kDemo = std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo";

// `stormo ARGS` under a 10 s timeout and a 2 GiB address-space limit: a hang or unbounded growth
// fails the test instead of the machine.
CommandResult run_bounded(const std::string& args, const std::string& stdin_from = "/dev/null") {
    return run_command("sh -c \"ulimit -v 2097152; exec timeout 10 '" + std::string(STORMO_CLI) + "' " + args +
                       "\" < " + stdin_from);
}

void expect_refused(const CommandResult& r, const std::string& needle) {
    EXPECT_NE(r.status, 0) << r.err;
    EXPECT_NE(r.status, 124) << "timed out";
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

// A copy of the demo model whose config.json is a FIFO nobody writes to.
void make_fifo_model(const TempDir& dir) {
    fs::create_symlink(kDemo + "/model.safetensors", dir.file("model.safetensors"));
    ASSERT_EQ(::mkfifo(dir.file("config.json").c_str(), 0644), 0);
}

}  // namespace

TEST(HardeningInputs, ReadFileRefusesFifoDirectoryAndDeviceWithoutBlocking) {
    TempDir dir;
    ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0644), 0);
    auto fifo = stormo::read_file(dir.file("fifo"), 1024, "a test file");
    ASSERT_FALSE(fifo);
    EXPECT_NE(fifo.error().message.find("is a FIFO, not a regular file"), std::string::npos) << fifo.error().message;
    auto directory = stormo::read_file(dir.path(), 1024, "a test file");
    ASSERT_FALSE(directory);
    EXPECT_NE(directory.error().message.find("is a directory"), std::string::npos);
    auto zero = stormo::read_file("/dev/zero", 1024, "a test file");
    ASSERT_FALSE(zero);
    EXPECT_NE(zero.error().message.find("character device"), std::string::npos);
}

TEST(HardeningInputs, ReadFileNamesItsCap) {
    TempDir dir;
    std::ofstream(dir.file("big")) << std::string(2000, 'x');
    auto big = stormo::read_file(dir.file("big"), 1000, "a test file");
    ASSERT_FALSE(big);
    EXPECT_NE(big.error().message.find("more than the 1000 bytes stormo reads from a test file"), std::string::npos)
        << big.error().message;
}

TEST(HardeningInputs, IdsFileAndConfigFromDevicesAndDirectoriesAreRefused) {
    expect_refused(run_bounded("generate --model " + kDemo + " --ids-file /dev/zero"), "--ids-file: /dev/zero: is a character device");
    expect_refused(run_bounded("generate --model " + kDemo + " --ids-file /tmp"), "--ids-file: /tmp: is a directory");
    expect_refused(run_bounded("generate --model " + kDemo + " --ids 1 --config /dev/zero"), "--config: /dev/zero");
    // A directory is an error, not an empty configuration.
    expect_refused(run_bounded("generate --model " + kDemo + " --ids 1 --config /tmp"), "--config: /tmp: is a directory");
}

TEST(HardeningInputs, ConfigFifoDoesNotBlock) {
    TempDir dir;
    make_fifo_model(dir);
    expect_refused(run_bounded("inspect --model " + dir.path()), "config.json: is a FIFO");
    // generation_config.json that is there but not a file is refused, not taken as absent.
    TempDir gen;
    fs::create_symlink(kDemo + "/model.safetensors", gen.file("model.safetensors"));
    fs::create_symlink(kDemo + "/config.json", gen.file("config.json"));
    ASSERT_EQ(::mkfifo(gen.file("generation_config.json").c_str(), 0644), 0);
    expect_refused(run_bounded("inspect --model " + gen.path()), "generation_config.json: is a FIFO");
    TempDir yaml;
    ASSERT_EQ(::mkfifo(yaml.file("engine.yaml").c_str(), 0644), 0);
    expect_refused(run_bounded("inspect --model " + kDemo + " --config " + yaml.file("engine.yaml")), "is a FIFO");
}

TEST(HardeningInputs, IdsFromStdinAreReadWithACap) {
    TempDir dir;
    std::ofstream(dir.file("ids")) << "1 2 3 40 4 5 6 45\n";
    const CommandResult ok = run_bounded("generate --model " + kDemo + " --ids-file - --max-tokens 4", dir.file("ids"));
    EXPECT_EQ(ok.status, 0) << ok.err;
    EXPECT_EQ(ok.out, "5\n7\n9\n48\n");
    expect_refused(run_bounded("generate --model " + kDemo + " --ids-file -", "/dev/zero"),
                   "stdin: longer than the 67108864 bytes stormo reads from an ids file");
}

TEST(HardeningInputs, RouteTraceValuesAreValidated) {
    EXPECT_FALSE(stormo::parse_route_trace("0 2000000000\n", "t"));
    auto huge = stormo::parse_route_trace("0 99999999999999999999\n", "t");
    ASSERT_FALSE(huge);
    EXPECT_EQ(huge.error().message, "t:1: expert id 99999999999999999999 is outside 0..16383");
    auto layer = stormo::parse_route_trace("5000 1\n", "t");
    ASSERT_FALSE(layer);
    EXPECT_EQ(layer.error().message, "t:1: layer 5000 is outside 0..1023");
    auto word = stormo::parse_route_trace("1 \x1b[31mred\n", "t");
    ASSERT_FALSE(word);
    EXPECT_EQ(word.error().message, "t:1: expected a number for the expert id, got \"\\x1b[31mred\"");
    auto good = stormo::parse_route_trace("0 1 2\n\n1 3\n", "t");
    ASSERT_TRUE(good);
    EXPECT_EQ(good->size(), 2u);
}

TEST(HardeningInputs, CacheSimRefusesBadSlotsDecaysAndTraces) {
    TempDir dir;
    std::ofstream(dir.file("trace")) << "0 1 2\n1 3\n";
    const std::string trace = " --trace " + dir.file("trace");
    expect_refused(run_bounded("cache-sim" + trace + " --slots -1"), "--slots -1: must be a positive integer");
    expect_refused(run_bounded("cache-sim" + trace + " --slots 100000000000"),
                   "--slots 100000000000: more than the 8 (layer, expert) pairs of the trace");
    expect_refused(run_bounded("cache-sim" + trace + " --slots 2 --decay 0"), "--decay 0: must be in (0, 1]");
    expect_refused(run_bounded("cache-sim" + trace + " --slots 2 --decay 1.5"), "--decay 1.5: must be in (0, 1]");
    std::ofstream(dir.file("wide")) << "0 2000000000\n";
    expect_refused(run_bounded("cache-sim --trace " + dir.file("wide") + " --slots 2"), "expert id 2000000000 is outside");
    std::ofstream(dir.file("spread")) << "1023 16383\n";
    expect_refused(run_bounded("cache-sim --trace " + dir.file("spread") + " --slots 2"),
                   "more than the 1048576 (layer, expert) pairs cache-sim simulates");
    expect_refused(run_bounded("cache-sim --trace /dev/zero --slots 2"), "--trace: /dev/zero: is a character device");
    const CommandResult ok = run_bounded("cache-sim" + trace + " --slots 2 --decay 1");
    EXPECT_EQ(ok.status, 0) << ok.err;
}

TEST(HardeningInputs, ThreadsAreCappedEverywhere) {
    const int cap = stormo::max_threads();
    EXPECT_LE(cap, 1024);
    EXPECT_GE(cap, 8);
    EXPECT_TRUE(stormo::check_thread_count(cap, "--threads"));
    auto over = stormo::check_thread_count(cap + 1, "--threads");
    ASSERT_FALSE(over);
    EXPECT_NE(over.error().message.find("more than the " + std::to_string(cap) + " threads"), std::string::npos);
    auto yaml = stormo::parse_engine_config("threads: 5000\n", "t.yaml");
    ASSERT_FALSE(yaml);
    EXPECT_NE(yaml.error().message.find("threads in t.yaml 5000: more than the " + std::to_string(cap) + " threads"),
              std::string::npos)
        << yaml.error().message;
    expect_refused(run_bounded("inspect --model " + kDemo + " --threads 100000"), "--threads 100000: more than the");
    expect_refused(run_bounded("bench-kernels --threads-list 1,100000"), "--threads-list 100000: more than the");
}

TEST(HardeningInputs, SafetensorsIndexThatIsAFifoIsRefused) {
    TempDir dir;
    fs::create_symlink(kDemo + "/config.json", dir.file("config.json"));
    ASSERT_EQ(::mkfifo(dir.file("model.safetensors.index.json").c_str(), 0644), 0);
    expect_refused(run_bounded("inspect --model " + dir.path()), "model.safetensors.index.json: is a FIFO");
}
