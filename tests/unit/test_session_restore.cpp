// Sessions that outlive their process, through `stormo pipe` as a program drives it:
// - SessionRestoredInANewProcess: for every fixture and demo, N tokens in one process, SAVE, LOAD
//   in a new process (with another context), continue: the tokens, greedy and sampled, are those
//   of the process that never stopped; and the file the pipe wrote, loaded in this process, gives
//   the continuation the logits bits of a session here that never stopped.
// - A save killed at random moments leaves the previous file, the new one or none: never a file
//   that loads as anything but a state the session really had.
// - A full disk (a small tmpfs) fails the save with a clear error and keeps the previous file.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>
#include <thread>

#include "cli_runner.hpp"
#include "oracle_support.hpp"
#include "pipe_process.hpp"
#include "runtime/engine_identity.hpp"
#include "runtime/session_file.hpp"
#include "util/atomic_file.hpp"
#include "util/file.hpp"

namespace stormo::testing {
namespace {

using stormo::test::TempDir;

std::string turn_line(size_t max_new, size_t keep, const std::string& sampling, std::span<const int32_t> ids) {
    // Appended, not chained with operator+: GCC 12 warns falsely (-Wrestrict) on such chains.
    std::string line = "TURN ";
    line.append(std::to_string(max_new)).append(" ").append(std::to_string(keep)).append(" ").append(sampling);
    line.append(" ").append(std::to_string(ids.size()));
    for (const int32_t id : ids) line.append(" ").append(std::to_string(id));
    return line;
}

// The last number of a DONE, SAVED or LOADED line: the session's position (SAVED: its bytes).
size_t last_number(const std::string& line) { return std::stoul(line.substr(line.rfind(' ') + 1)); }

// The continuation turns both processes run from the saved position: greedy, sampled with top-p,
// sampled with top-k; each keeps the saved positions (so the later ones rewind to them).
const std::vector<std::string> kContinuations = {"0 1 0", "1 0.95 0", "0.8 1 5"};
constexpr size_t kContinuationTokens = 16;

class SessionRestoredInANewProcess : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override { STORMO_OPEN_FIXTURE_OR_SKIP(engine_, model_dir_of(GetParam())); }

    std::vector<float> all_logits(Session& session, std::span<const int32_t> ids) {
        ForwardOptions all;
        all.all_logits = true;
        auto logits = engine_->pipeline().forward(session, ids, all);
        EXPECT_TRUE(logits.has_value()) << logits.error().message;
        return logits ? *logits : std::vector<float>{};
    }

    // The file another process wrote, loaded here and continued by `rest`, against a session here
    // that consumed the same positions without stopping: the same logits bits.
    void expect_same_bits_as_uninterrupted(const std::string& file, std::span<const int32_t> rest) {
        auto identity = engine_identity(*engine_);
        ASSERT_TRUE(identity.has_value()) << identity.error().message;
        auto loaded = load_session_file(file, *identity, std::move(*engine_->new_session(256)));
        ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
        const std::vector<int32_t> held(loaded->session->tokens().begin(), loaded->session->tokens().end());
        const std::vector<float> continued = all_logits(*loaded->session, rest);
        auto whole = std::move(*engine_->new_session(256));
        all_logits(*whole, held);
        const std::vector<float> expected = all_logits(*whole, rest);
        ASSERT_EQ(continued.size(), expected.size());
        EXPECT_EQ(std::memcmp(continued.data(), expected.data(), expected.size() * sizeof(float)), 0)
            << "the loaded session's logits differ from the uninterrupted session's";
    }

    std::unique_ptr<Engine> engine_;
};

TEST_P(SessionRestoredInANewProcess, ContinuesWithTheTokensOfTheProcessThatNeverStopped) {
    const std::string dir = model_dir_of(GetParam());
    const std::vector<int32_t> tokens = token_source_of(GetParam());
    const size_t split = tokens.size() / 2;
    TempDir tmp;
    const std::string file = tmp.file("s.session");

    PipeProcess whole({"--model", dir, "--context", "256", "--seed", "9"});
    ASSERT_TRUE(whole.line().starts_with("READY 256 ")) << GetParam();
    whole.send(turn_line(8, 0, "0 1 0", std::span<const int32_t>(tokens).first(split)));
    const auto first = whole.answer();
    ASSERT_TRUE(first.back().starts_with("DONE ")) << first.back();
    ASSERT_GE(first.size(), 2u);
    const size_t saved_at = last_number(first.back());
    whole.send("SAVE " + file);
    const auto saved = whole.answer();
    ASSERT_TRUE(saved.back().starts_with("SAVED " + std::to_string(saved_at) + " ")) << saved.back();
    // The last generated token (not consumed yet), then the rest of the sequence.
    std::vector<int32_t> rest = {std::stoi(first[first.size() - 2].substr(6))};
    rest.insert(rest.end(), tokens.begin() + static_cast<ptrdiff_t>(split), tokens.end());
    std::vector<std::vector<std::string>> expected;
    for (const auto& sampling : kContinuations) {
        whole.send(turn_line(kContinuationTokens, saved_at, sampling, rest));
        expected.push_back(whole.answer());
        ASSERT_TRUE(expected.back().back().starts_with("DONE ")) << expected.back().back();
    }
    whole.send("SHUTDOWN");
    EXPECT_EQ(whole.wait_exit(), 0);
    expect_same_bits_as_uninterrupted(file, rest);

    // A new process with another context: the file holds positions, not a capacity.
    PipeProcess restored({"--model", dir, "--context", "320", "--seed", "9"});
    ASSERT_TRUE(restored.line().starts_with("READY 320 "));
    restored.send("LOAD " + file);
    ASSERT_EQ(restored.answer(), std::vector<std::string>{"LOADED " + std::to_string(saved_at)});
    for (size_t i = 0; i < kContinuations.size(); ++i) {
        restored.send(turn_line(kContinuationTokens, saved_at, kContinuations[i], rest));
        EXPECT_EQ(restored.answer(), expected[i]) << "continuation " << kContinuations[i];
    }
    restored.send("SHUTDOWN");
    EXPECT_EQ(restored.wait_exit(), 0);
}

INSTANTIATE_TEST_SUITE_P(Models, SessionRestoredInANewProcess, ::testing::ValuesIn(fixture_and_demo_names()),
                         [](const auto& p) { return test_name_of(p.param); });

// The model both tests save with, opened here to check what the files hold.
class SessionFileOnDisk : public ::testing::Test {
protected:
    void SetUp() override {
        STORMO_OPEN_FIXTURE_OR_SKIP(engine_, demo_dir());
        auto id = engine_identity(*engine_);
        ASSERT_TRUE(id.has_value()) << id.error().message;
        identity_ = *id;
    }
    // The file loaded here, or its refusal.
    Expected<LoadedSessionFile> load(const std::string& path) {
        auto blank = engine_->new_session(kContext);
        if (!blank) return tl::unexpected(blank.error());
        return load_session_file(path, identity_, std::move(*blank));
    }
    static constexpr size_t kContext = 64;
    std::unique_ptr<Engine> engine_;
    EngineIdentity identity_;
};

// TURN and SAVE one position at a time, killed at a random moment: the file is absent (no save
// finished), or holds the state of the last save answered (SAVED) or of the one in flight, as a
// prefix of the ids sent, never a part.
TEST_F(SessionFileOnDisk, ASaveKilledAtARandomMomentLeavesTheOldFileTheNewOneOrNone) {
    const std::vector<int32_t> ids = token_source_of("gpt-oss-demo");
    const size_t turns = ids.size();
    std::string script;
    TempDir tmp;
    const std::string file = tmp.file("k.session");
    for (size_t i = 0; i < turns; ++i)
        script += turn_line(1, i, "0 1 0", std::span<const int32_t>(ids).subspan(i, 1)) + "\nSAVE " + file + "\n";
    script.pop_back();

    // One run to the end: how long the loop of saves takes, so the kills spread over it.
    std::chrono::steady_clock::duration loop{};
    {
        PipeProcess p({"--model", demo_dir(), "--context", std::to_string(kContext)});
        ASSERT_TRUE(p.line().starts_with("READY"));
        const auto start = std::chrono::steady_clock::now();
        p.send(script);
        std::string last;
        for (size_t saves = 0; saves < turns;) {
            last = p.line();
            ASSERT_FALSE(last.starts_with("<") || last.starts_with("ERROR")) << last;
            saves += last.starts_with("SAVED");
        }
        loop = std::chrono::steady_clock::now() - start;
        EXPECT_EQ(last, "SAVED " + std::to_string(turns) + " " + std::to_string(std::filesystem::file_size(file)));
        std::filesystem::remove(file);
    }
    const auto loop_us = std::max<int64_t>(1000, std::chrono::duration_cast<std::chrono::microseconds>(loop).count());
    const uint32_t seed = std::random_device{}();
    SCOPED_TRACE("random seed " + std::to_string(seed) + ", the loop of saves takes " + std::to_string(loop_us) + " us");
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int64_t> delay_us(0, loop_us);
    size_t absent = 0, last_answered = 0, in_flight = 0, cut_short = 0;
    for (int round = 0; round < 24; ++round) {
        PipeProcess p({"--model", demo_dir(), "--context", std::to_string(kContext)});
        ASSERT_TRUE(p.line().starts_with("READY"));
        p.send(script);
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
        p.kill_now();
        size_t answered = 0;  // the position of the last SAVED line written before the kill
        for (std::string l = p.line(2000); !l.starts_with("<"); l = p.line(2000))
            if (l.starts_with("SAVED ")) answered = std::stoul(l.substr(6, l.find(' ', 6) - 6));
        cut_short += answered < turns;
        for (const auto& entry : std::filesystem::directory_iterator(tmp.path())) {
            const std::string name = entry.path().filename().string();
            if (name == "k.session") continue;
            // What a kill leaves between create and rename: a temporary name, never the file's.
            EXPECT_TRUE(is_atomic_temp_name(name)) << name;
            std::filesystem::remove(entry.path());
        }
        if (!std::filesystem::exists(file)) {
            EXPECT_EQ(answered, 0u) << "a save was answered but the file is gone";
            ++absent;
            continue;
        }
        auto loaded = load(file);
        ASSERT_TRUE(loaded.has_value()) << "round " << round << ": " << loaded.error().message;
        const size_t held = loaded->session->position();
        EXPECT_TRUE(held == answered || held == answered + 1) << "the file holds " << held << " positions, the last save answered " << answered;
        EXPECT_TRUE(std::ranges::equal(loaded->session->tokens(), std::span<const int32_t>(ids).first(held)));
        (held == answered ? last_answered : in_flight) += 1;
        std::filesystem::remove(file);
    }
    std::cout << "[ killed ] 24 rounds: " << absent << " with no file yet, " << last_answered << " holding the last save answered, "
              << in_flight << " the save in flight; " << cut_short << " killed before the last save\n";
    EXPECT_GT(cut_short, 0u) << "no kill landed inside the loop of saves";
}

// The shell under a mount namespace of its own: a tmpfs of `size` at `dir` for the script, gone
// when it ends. Exit 77: the mount was refused.
stormo::test::CommandResult in_small_tmpfs(const std::string& dir, const std::string& size, const std::string& script,
                                           const TempDir& tmp) {
    const std::string file = tmp.file("script.sh");
    EXPECT_TRUE(write_file(file, "mount -t tmpfs -o size=" + size + " tmpfs '" + dir + "' || exit 77\n" + script).has_value());
    return stormo::test::run_command("unshare --mount --map-root-user sh '" + file + "'");
}

TEST_F(SessionFileOnDisk, ASaveOntoAFullDiskFailsClearlyAndKeepsThePreviousFile) {
    if (std::system("command -v unshare >/dev/null 2>&1") != 0) GTEST_SKIP() << "no unshare(1) to mount a small tmpfs with";
    TempDir tmp;
    const std::string disk = tmp.file("disk");
    std::filesystem::create_directories(disk);
    const std::string session = disk + "/s.session";
    const std::string stormo = std::string("'") + STORMO_CLI + "'";
    const std::string pipe = stormo + " pipe --model '" + demo_dir() + "' --context " + std::to_string(kContext);
    ASSERT_TRUE(write_file(tmp.file("first.txt"), "TURN 12 0 0 1 0 8 1 2 3 40 4 5 6 45\nSAVE " + session + "\n").has_value());
    ASSERT_TRUE(write_file(tmp.file("second.txt"), "TURN 12 0 0 1 0 4 3 40 8 45\nSAVE " + session + "\nLOAD " + session + "\n").has_value());
    const std::string script =
        pipe + " < '" + tmp.file("first.txt") + "' > '" + tmp.file("out1") + "' || exit 1\n" +
        // Fills what is left of the disk.
        "head -c 64m /dev/zero > '" + disk + "/filler' 2>/dev/null\n" +
        pipe + " < '" + tmp.file("second.txt") + "' > '" + tmp.file("out2") + "' || exit 1\n" +
        stormo + " run --model '" + demo_dir() + "' --session '" + disk + "/r.session' --prompt 3+8= > '" + tmp.file("run_out") +
        "' 2> '" + tmp.file("run_err") + "'; echo $? > '" + tmp.file("run_rc") + "'\n" +
        "ls -a '" + disk + "' > '" + tmp.file("listing") + "'\n" +
        "cp '" + session + "' '" + tmp.file("kept.session") + "'\n";
    const auto r = in_small_tmpfs(disk, "1m", script, tmp);
    if (r.status == 77 || r.err.starts_with("unshare:"))
        GTEST_SKIP() << "a small tmpfs cannot be mounted here: " << r.err;
    ASSERT_EQ(r.status, 0) << r.err;

    const std::string out1 = *read_file(tmp.file("out1"));
    EXPECT_NE(out1.find("DONE STOP 4 11\nSAVED 11 "), std::string::npos) << out1;
    std::istringstream out2(*read_file(tmp.file("out2")));
    std::vector<std::string> lines;
    for (std::string l; std::getline(out2, l);) lines.push_back(l);
    ASSERT_GE(lines.size(), 3u);
    EXPECT_TRUE(lines.back() == "LOADED 11") << lines.back();
    const std::string& refused = lines[lines.size() - 2];
    EXPECT_TRUE(refused.starts_with("ERROR save_failed 0 ")) << refused;
    EXPECT_NE(refused.find("no space left on the device"), std::string::npos) << refused;
    EXPECT_NE(refused.find("the file keeps what it held"), std::string::npos) << refused;

    // `run --session` answers, then says the save failed, with a non-zero exit; no file is left.
    EXPECT_EQ(*read_file(tmp.file("run_rc")), "1\n");
    EXPECT_NE(read_file(tmp.file("run_err"))->find("no space left on the device"), std::string::npos) << *read_file(tmp.file("run_err"));
    EXPECT_EQ(*read_file(tmp.file("listing")), ".\n..\nfiller\ns.session\n");

    // The file kept is the first process's session, whole.
    auto kept = load(tmp.file("kept.session"));
    ASSERT_TRUE(kept.has_value()) << kept.error().message;
    EXPECT_EQ(kept->session->position(), 11u);
    const std::vector<int32_t> first = {1, 2, 3, 40, 4, 5, 6, 45, 5, 7, 9};
    EXPECT_TRUE(std::ranges::equal(kept->session->tokens(), first));
}

}  // namespace
}  // namespace stormo::testing
