// Sessions on disk through the commands a user runs: `run --session` continues the conversation a
// file holds, turn after turn in new processes, with the tokens of one `chat` that never stopped;
// `chat`'s /save and /load; a file that does not belong (another model, truncated, a changed byte,
// no session file, a context too small) is refused with the file and the reason, exit non-zero,
// and stays as it was.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_runner.hpp"
#include "util/file.hpp"

namespace stormo::test {
namespace {

std::string demo(const std::string& name) { return std::string(STORMO_SOURCE_DIR) + "/models/" + name; }

// Sampled, so every later token depends on the bits of the logits before it.
const std::string kSampling = "--temperature 1 --top-p 0.95 --seed 11";
const std::vector<std::string> kQuestions = {"3+8=", "copy:tiwyeuq=", "178+798=", "rev:abc="};

std::string chat_input() {
    std::string input;
    for (const auto& q : kQuestions) input += q + "\n";
    return input;
}

CommandResult run_turn(const std::string& model, const std::string& session, const std::string& prompt,
                       const std::string& options = kSampling) {
    return run_cli("run --model '" + demo(model) + "' --session '" + session + "' --prompt '" + prompt + "' " + options);
}

class CliSessionDemos : public ::testing::TestWithParam<std::string> {};

// Each question in its own process, continuing the file; the answers are those of one chat that
// asked them all, and each process after the first reuses positions the file held.
TEST_P(CliSessionDemos, RunTurnAfterTurnInNewProcessesAnswersAsOneChat) {
    TempDir tmp;
    const std::string input = tmp.file("questions.txt");
    ASSERT_TRUE(write_file(input, chat_input()).has_value());
    const auto whole = run_cli("chat --model '" + demo(GetParam()) + "' " + kSampling + " < '" + input + "'");
    ASSERT_EQ(whole.status, 0) << whole.err;
    const std::string session = tmp.file("chat.session");
    std::string answers;
    for (size_t i = 0; i < kQuestions.size(); ++i) {
        // Every other turn with another context and --max-tokens (so other ring sizes: chat's
        // rewind slack follows --max-tokens): the file holds positions, not a capacity.
        const auto turn = run_turn(GetParam(), session, kQuestions[i], kSampling + (i % 2 ? " --context 700 --max-tokens 300" : ""));
        ASSERT_EQ(turn.status, 0) << turn.err;
        answers += turn.out;
        EXPECT_NE(turn.err.find("saved " + session + ": "), std::string::npos) << turn.err;
        if (i > 0) {
            EXPECT_NE(turn.err.find("resumed " + session + ": " + std::to_string(2 * i) + " messages"), std::string::npos) << turn.err;
            EXPECT_NE(turn.err.find(" reused)"), std::string::npos) << turn.err;
        }
    }
    EXPECT_EQ(answers, whole.out);
}

INSTANTIATE_TEST_SUITE_P(Demos, CliSessionDemos, ::testing::Values("gpt-oss-demo", "qwen3-moe-demo", "glm-moe-dsa-demo", "deepseek-v3-demo"),
                         [](const auto& p) {
                             std::string name = p.param;
                             for (char& c : name)
                                 if (c == '-') c = '_';
                             return name;
                         });

// chat's /save, then /load in a new chat: the next answer is the one the first chat would give;
// a /load that fails leaves the conversation as it was.
TEST(CliSession, ChatSavesAndLoadsAndAFailedLoadChangesNothing) {
    TempDir tmp;
    const std::string saved = tmp.file("saved.session");
    const std::string input = tmp.file("first.txt");
    ASSERT_TRUE(write_file(input, "3+8=\ncopy:tiwyeuq=\n/save " + saved + "\n178+798=\n").has_value());
    const auto first = run_cli("chat --model '" + demo("gpt-oss-demo") + "' " + kSampling + " < '" + input + "'");
    ASSERT_EQ(first.status, 0) << first.err;
    EXPECT_NE(first.out.find("(saved " + saved + ": 4 messages, "), std::string::npos) << first.out;
    EXPECT_NE(first.out.find(" positions, "), std::string::npos) << first.out;
    const std::string last_answer = first.out.substr(first.out.rfind(")\n") + 2);

    const std::string junk = tmp.file("junk.session");
    ASSERT_TRUE(write_file(junk, "not a session\n").has_value());
    const std::string next = tmp.file("next.txt");
    ASSERT_TRUE(write_file(next, "/load " + junk + "\n/load\n/load " + saved + "\n/load " + junk + "\n178+798=\n/stats\n").has_value());
    const auto second = run_cli("chat --model '" + demo("gpt-oss-demo") + "' " + kSampling + " < '" + next + "'");
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_NE(second.err.find("/load: " + junk + ": not a stormo session file"), std::string::npos) << second.err;
    EXPECT_NE(second.err.find("the conversation is as it was"), std::string::npos) << second.err;
    EXPECT_NE(second.out.find("usage: /load FILE"), std::string::npos) << second.out;
    EXPECT_NE(second.out.find("(loaded " + saved + ": 4 messages, "), std::string::npos) << second.out;
    EXPECT_NE(second.out.find(last_answer + "turns 1, "), std::string::npos) << second.out << "\nwanted: " << last_answer;
    EXPECT_EQ(*read_file(junk), "not a session\n");
}

// With --session, /save and /load default to its file; every answered turn saves it.
TEST(CliSession, ChatWithASessionFileSavesEachTurnAndResumesIt) {
    TempDir tmp;
    const std::string session = tmp.file("c.session");
    const std::string input = tmp.file("in.txt");
    ASSERT_TRUE(write_file(input, "3+8=\n").has_value());
    const std::string chat = "chat --model '" + demo("qwen3-moe-demo") + "' --session '" + session + "' " + kSampling;
    ASSERT_EQ(run_cli(chat + " < '" + input + "'").status, 0);
    ASSERT_TRUE(std::filesystem::exists(session));
    ASSERT_TRUE(write_file(input, "/stats\n/reset\n/load\n/stats\n/save\n").has_value());
    const auto second = run_cli(chat + " < '" + input + "'");
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_NE(second.err.find("resumed " + session + ": 2 messages"), std::string::npos) << second.err;
    EXPECT_NE(second.out.find("(loaded " + session + ": 2 messages, "), std::string::npos) << second.out;
    EXPECT_NE(second.out.find("(saved " + session + ": 2 messages, "), std::string::npos) << second.out;
}

// What a refusal must leave: a non-zero exit, the file and the reason on stderr, no answer, the
// file's bytes as they were.
void expect_refused(const std::string& session, const std::string& options, const std::string& reason,
                    const std::string& model = "gpt-oss-demo") {
    const auto before = read_file(session, uint64_t{1} << 30);
    ASSERT_TRUE(before.has_value());
    const auto r = run_turn(model, session, "1+1=", options);
    EXPECT_NE(r.status, 0) << reason;
    EXPECT_EQ(r.out, "") << reason;
    EXPECT_NE(r.err.find("--session: " + session + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
    EXPECT_EQ(*read_file(session, uint64_t{1} << 30), *before) << "the refused file changed: " << reason;
}

TEST(CliSession, AFileThatDoesNotBelongIsRefusedWithItsReasonAndKept) {
    TempDir tmp;
    const std::string good = tmp.file("good.session");
    ASSERT_EQ(run_turn("gpt-oss-demo", good, "3+8=").status, 0);
    ASSERT_EQ(run_turn("gpt-oss-demo", good, "copy:tiwyeuq=").status, 0);
    const std::string bytes = *read_file(good, uint64_t{1} << 30);

    expect_refused(good, kSampling, "it was saved from another model", "qwen3-moe-demo");
    expect_refused(good, "--context 8", "more than the context of 8 (--context raises it)");

    const std::string truncated = tmp.file("truncated.session");
    ASSERT_TRUE(write_file(truncated, bytes.substr(0, bytes.size() / 2)).has_value());
    expect_refused(truncated, kSampling, "the session file is truncated");

    const std::string corrupted = tmp.file("corrupted.session");
    std::string flipped = bytes;
    flipped[bytes.size() * 3 / 4] = static_cast<char>(flipped[bytes.size() * 3 / 4] ^ 0x01);
    ASSERT_TRUE(write_file(corrupted, flipped).has_value());
    expect_refused(corrupted, kSampling, "the session file is corrupted");

    const std::string foreign = tmp.file("config.session");
    std::filesystem::copy_file(demo("gpt-oss-demo") + "/config.json", foreign);
    expect_refused(foreign, kSampling, "not a stormo session file");

    // A pipe's file: the right model's KV, but no conversation to continue.
    const std::string piped = tmp.file("pipe.session");
    const std::string lines = tmp.file("pipe.txt");
    ASSERT_TRUE(write_file(lines, "TURN 4 0 0 1 0 4 3 40 8 45\nSAVE " + piped + "\n").has_value());
    const auto pipe = run_cli("pipe --model '" + demo("gpt-oss-demo") + "' < '" + lines + "'");
    ASSERT_NE(pipe.out.find("SAVED "), std::string::npos) << pipe.out;
    expect_refused(piped, kSampling, "the session holds no conversation");

    // The good file, still whole, continues.
    EXPECT_EQ(run_turn("gpt-oss-demo", good, "178+798=").status, 0);
}

TEST(CliSession, ASessionInAMissingDirectoryIsRefusedBeforeTheModelLoads) {
    TempDir tmp;
    const auto r = run_turn("gpt-oss-demo", tmp.file("no-such-dir/x.session"), "1+1=");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("--session"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.file("no-such-dir")));
}

}  // namespace
}  // namespace stormo::test
