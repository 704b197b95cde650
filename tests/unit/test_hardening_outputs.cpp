// Outputs: every output path is checked before the model loads (no result lost after minutes of
// work), and every write after it is checked through flush and close (a full disk is an error,
// never exit 0 with nothing written).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using stormo::test::CommandResult;
using stormo::test::run_cli;
using stormo::test::TempDir;

const std::string kDemo = std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo";
const std::string kGenerate = "generate --model " + kDemo + " --ids 1,2,3,40,4,5,6,45 --max-tokens 4";
const std::string kLogits = "logits --model " + kDemo + " --ids 1,2,3";

void expect_error(const CommandResult& r, const std::string& needle) {
    EXPECT_NE(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

}  // namespace

TEST(HardeningOutputs, WritesToAFullDeviceFail) {
    expect_error(run_cli(kGenerate + " --stats /dev/full"), "--stats: /dev/full: write failed");
    expect_error(run_cli(kGenerate + " --route-trace /dev/full"), "--route-trace: /dev/full: write failed");
    expect_error(run_cli(kLogits + " --out /dev/full"), "--out: /dev/full: write failed");
    // The generated ids are the result: stdout on a full device is a failure too.
    expect_error(stormo::test::run_command("sh -c \"'" + std::string(STORMO_CLI) + "' " + kGenerate + " > /dev/full\""),
                 "stdout: write failed");
}

TEST(HardeningOutputs, OutputPathsAreCheckedBeforeTheWork) {
    TempDir dir;
    // Refused before any token is generated: nothing on stdout.
    const CommandResult proc = run_cli(kGenerate + " --stats /proc/stormo-no-such-file");
    expect_error(proc, "--stats /proc/stormo-no-such-file: cannot be written");
    EXPECT_EQ(proc.out, "");
    const CommandResult directory = run_cli(kGenerate + " --route-trace " + dir.path());
    expect_error(directory, "--route-trace " + dir.path() + ": is a directory");
    EXPECT_EQ(directory.out, "");
    expect_error(run_cli(kGenerate + " --stats " + dir.file("missing/stats.json")), "cannot be written");
    expect_error(run_cli(kLogits + " --out ''"), "--out: needs a file name, got an empty one");
    expect_error(run_cli(kLogits + " --out " + dir.file("x.npy") + " --hidden-out " + dir.file("x.npy")),
                 "--hidden-out " + dir.file("x.npy") + ": the same file as --out");
    EXPECT_FALSE(fs::exists(dir.file("x.npy")));
    // An existing file under a second name (a hard link) is the same file too.
    std::ofstream(dir.file("a.npy")) << "x";
    fs::create_hard_link(dir.file("a.npy"), dir.file("b.npy"));
    expect_error(run_cli(kLogits + " --out " + dir.file("a.npy") + " --hidden-out " + dir.file("b.npy")),
                 "the same file as --out");
    // A checked path that did not exist is not left behind.
    expect_error(run_cli("logits --ids 1 --out " + dir.file("l.npy") + " --model /nonexistent"), "does not exist");
    EXPECT_FALSE(fs::exists(dir.file("l.npy")));
}

TEST(HardeningOutputs, ADanglingSymlinkIsWrittenThrough) {
    TempDir dir;
    // --stats through a link to a file not there yet: created where the link points, as a shell's > does.
    fs::create_symlink(dir.file("real-stats.json"), dir.file("stats.json"));
    const CommandResult ok = run_cli(kGenerate + " --stats " + dir.file("stats.json"));
    EXPECT_EQ(ok.status, 0) << ok.err;
    EXPECT_TRUE(fs::is_symlink(dir.file("stats.json")));
    EXPECT_GT(fs::file_size(dir.file("real-stats.json")), 0u);
    // A relative link resolves against its own directory; logits writes through it too.
    fs::create_symlink("real-l.npy", dir.file("l.npy"));
    const CommandResult logits = run_cli(kLogits + " --out " + dir.file("l.npy"));
    EXPECT_EQ(logits.status, 0) << logits.err;
    EXPECT_GT(fs::file_size(dir.file("real-l.npy")), 0u);
    // A link whose target cannot be created says so, not "File exists".
    fs::create_symlink(dir.file("missing/x.npy"), dir.file("nowhere.npy"));
    const CommandResult nowhere = run_cli(kLogits + " --out " + dir.file("nowhere.npy"));
    expect_error(nowhere, "--out " + dir.file("nowhere.npy") + " (a symlink to " + dir.file("missing/x.npy") +
                              ", which does not exist): cannot be written: No such file or directory");
    EXPECT_EQ(nowhere.err.find("File exists"), std::string::npos) << nowhere.err;
    // Two names for one new file: the link and its target.
    fs::create_symlink(dir.file("new.npy"), dir.file("to-new.npy"));
    expect_error(run_cli(kLogits + " --out " + dir.file("new.npy") + " --hidden-out " + dir.file("to-new.npy")),
                 "the same file as --out");
    // A directory is not created through a link: --dump says what the path is.
    fs::create_symlink(dir.file("no-dump-dir"), dir.file("dump"));
    expect_error(run_cli(kGenerate + " --dump " + dir.file("dump")),
                 "--dump " + dir.file("dump") + ": a symlink to " + dir.file("no-dump-dir") + ", which does not exist");
}

TEST(HardeningOutputs, DumpPositionPastTheEndCreatesNothing) {
    TempDir dir;
    const std::string dump = dir.file("dump");
    expect_error(run_cli(kGenerate + " --dump " + dump + " --dump-position 100"),
                 "--dump-position 100 is past the last position the model runs (10:");
    EXPECT_FALSE(fs::exists(dump));
    expect_error(run_cli(kLogits + " --out " + dir.file("l.npy") + " --dump " + dump + " --dump-position 3"),
                 "--dump-position 3 is past the last of 3 positions");
    EXPECT_FALSE(fs::exists(dump));
    // The dump directory named as an output file too: refused before anything is made (it used to
    // leave the directory, made first, behind the failed write of the file).
    expect_error(run_cli(kLogits + " --out " + dump + " --dump " + dump), "--dump " + dump + ": the same path as --out");
    EXPECT_FALSE(fs::exists(dump));
    expect_error(run_cli(kGenerate + " --stats " + dump + " --dump " + dump), "--dump " + dump + ": the same path as --stats");
    EXPECT_FALSE(fs::exists(dump));
    const CommandResult ok = run_cli(kGenerate + " --dump " + dump + " --dump-position 10");
    EXPECT_EQ(ok.status, 0) << ok.err;
    EXPECT_FALSE(fs::is_empty(dump));
}
