// `stormo pipe` driven as an embedding program drives it: a child process on two pipes, one line
// written, the answer lines read as they come. Its greedy and sampled turns equal `generate`'s.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "oracle_support.hpp"

namespace stormo::testing {
namespace {

class PipeProcess {
public:
    explicit PipeProcess(const std::vector<std::string>& args) {
        int to_child[2], from_child[2];
        if (::pipe(to_child) != 0 || ::pipe(from_child) != 0) return;
        pid_ = fork();
        if (pid_ == 0) {
            dup2(to_child[0], STDIN_FILENO);
            dup2(from_child[1], STDOUT_FILENO);
            for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) close(fd);
            unsetenv("STORMO_PLUGIN_PATH");
            std::vector<std::string> argv = {STORMO_CLI, "pipe"};
            argv.insert(argv.end(), args.begin(), args.end());
            std::vector<char*> raw;
            for (auto& a : argv) raw.push_back(a.data());
            raw.push_back(nullptr);
            execv(raw[0], raw.data());
            _exit(127);
        }
        close(to_child[0]);
        close(from_child[1]);
        in_ = to_child[1];
        out_ = from_child[0];
    }
    ~PipeProcess() {
        if (in_ >= 0) close(in_);
        if (out_ >= 0) close(out_);
        if (pid_ > 0 && !reaped_) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    void send(const std::string& line) {
        const std::string text = line + "\n";
        ASSERT_EQ(write(in_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    }
    void close_input() {
        close(in_);
        in_ = -1;
    }
    // The next line stormo writes, or "<timeout>" / "<eof>".
    std::string line(int timeout_ms = 60000) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        for (;;) {
            if (const size_t nl = buffered_.find('\n'); nl != std::string::npos) {
                std::string l = buffered_.substr(0, nl);
                buffered_.erase(0, nl + 1);
                return l;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return "<timeout>";
            pollfd p{out_, POLLIN, 0};
            if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
            char chunk[4096];
            const ssize_t n = read(out_, chunk, sizeof chunk);
            if (n <= 0) return "<eof>";
            buffered_.append(chunk, static_cast<size_t>(n));
        }
    }
    // Lines up to and including the next DONE or ERROR.
    std::vector<std::string> answer() {
        std::vector<std::string> lines;
        for (;;) {
            lines.push_back(line());
            const std::string& l = lines.back();
            if (l.starts_with("DONE") || l.starts_with("ERROR") || l.starts_with("<")) return lines;
        }
    }
    int wait_exit() {
        int status = 0;
        waitpid(pid_, &status, 0);
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

private:
    pid_t pid_ = -1;
    int in_ = -1;
    int out_ = -1;
    bool reaped_ = false;
    std::string buffered_;
};

// `stormo generate`'s ids for the same request, as TOKEN lines.
std::vector<std::string> generate_tokens(const std::string& ids, const std::string& options) {
    const auto r = stormo::test::run_cli("generate --model " + demo_dir() + " --ids " + ids + " " + options);
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string id; std::getline(in, id);) lines.push_back("TOKEN " + id);
    return lines;
}

std::vector<std::string> tokens_of(const std::vector<std::string>& answer) {
    return {answer.begin(), answer.end() - 1};
}

TEST(CliPipe, GreetsThenAnswersATurnAsGenerateDoes) {
    PipeProcess p({"--model", demo_dir()});
    EXPECT_EQ(p.line(), "READY 4096 64 48");  // the demo: 64 ids, <|end|> = 48 stops
    p.send("TURN 12 0 0 1 0 8 1 2 3 40 4 5 6 45");  // "123+456="
    const auto answer = p.answer();
    EXPECT_EQ(tokens_of(answer), (std::vector<std::string>{"TOKEN 5", "TOKEN 7", "TOKEN 9", "TOKEN 48"}));
    // 8 prompt ids and 3 of the 4 generated ones consumed: the stop id is the next turn's to send.
    EXPECT_EQ(answer.back(), "DONE STOP 4 11");
    p.send("SHUTDOWN");
    EXPECT_EQ(p.wait_exit(), 0);
}

TEST(CliPipe, ANextTurnKeepsThePositionsAndEqualsTheWholeConversationRunFresh) {
    PipeProcess p({"--model", demo_dir()});
    ASSERT_TRUE(p.line().starts_with("READY"));
    p.send("TURN 12 0 0 1 0 4 3 40 8 45");  // "3+8="
    const auto first = p.answer();
    ASSERT_TRUE(first.back().starts_with("DONE STOP")) << first.back();
    // The answer's last id (the stop) and the next problem, after everything kept.
    std::string held = "3,40,8,45";
    for (size_t i = 0; i + 1 < first.size() - 1; ++i) held.append(",").append(first[i].substr(6));
    const std::string stop = first[first.size() - 2].substr(6);
    const size_t pos = std::stoul(first.back().substr(first.back().rfind(' ') + 1));
    p.send("TURN 12 " + std::to_string(pos) + " 0 1 0 9 " + stop + " 1 7 8 40 7 9 8 45");  // "178+798="
    const auto second = p.answer();
    EXPECT_EQ(tokens_of(second), generate_tokens(held + "," + stop + ",1,7,8,40,7,9,8,45", "--max-tokens 12"));
    EXPECT_TRUE(second.back().starts_with("DONE STOP")) << second.back();
    p.close_input();
    EXPECT_EQ(p.line(), "<eof>");
    EXPECT_EQ(p.wait_exit(), 0);  // the end of input is a clean exit too
}

TEST(CliPipe, EveryRefusedLineChangesNothingAndTheNextTurnStillAnswers) {
    PipeProcess p({"--model", demo_dir()});
    ASSERT_TRUE(p.line().starts_with("READY"));
    p.send("TURN 12 0 0 1 0 4 3 40 8 45");
    const auto first = p.answer();
    ASSERT_TRUE(first.back().starts_with("DONE")) << first.back();
    const std::string pos = first.back().substr(first.back().rfind(' ') + 1);
    const std::pair<std::string, std::string> refused[] = {
        {"HELLO", "ERROR unknown_command 0 "},
        {"TURN 12 0 0 1 0 2 1", "ERROR bad_request 0 n is 2 but 1 ids follow"},
        {"TURN 12 0 0 1 0 1 64", "ERROR bad_token 0 id 64 is outside the vocabulary [0, 64)"},
        {"TURN 12 999 0 1 0 1 5", "ERROR bad_keep 0 keep 999 is beyond the session's position " + pos},
        {"TURN 12 0 -1 1 0 1 5", "ERROR bad_sampling 0 temp must be >= 0"},
        {"TURN 12 0 0 0 0 1 5", "ERROR bad_sampling 0 top_p must be in (0, 1]"},
        {"TURN 5000 0 0 1 0 5000 " + [] {
             std::string ids;
             for (int i = 0; i < 5000; ++i) ids.append(i ? " " : "").append(std::to_string(i % 40));
             return ids;
         }(),
         "ERROR context_full 0 keep 0 + 5000 ids exceed the context of 4096"},
        {"RESET please", "ERROR bad_request 0 RESET takes no arguments"},
    };
    for (const auto& [line, expected] : refused) {
        p.send(line);
        const auto answer = p.answer();
        ASSERT_EQ(answer.size(), 1u) << line;
        EXPECT_TRUE(answer[0].starts_with(expected)) << line << " -> " << answer[0];
    }
    p.send("");  // blank lines are ignored
    // Still at the first turn's end: continuing from there gives what a fresh run of the whole gives.
    p.send("TURN 12 " + pos + " 0 1 0 1 48");
    std::string held = "3,40,8,45";
    for (size_t i = 0; i + 1 < first.size(); ++i) held.append(",").append(first[i].substr(6));
    const auto again = p.answer();
    EXPECT_EQ(tokens_of(again), generate_tokens(held, "--max-tokens 12"));
}

TEST(CliPipe, ASampledTurnIsSeededAndEqualsGenerateWithTheSameSettings) {
    PipeProcess p({"--model", demo_dir(), "--seed", "9"});
    ASSERT_TRUE(p.line().starts_with("READY"));
    p.send("TURN 6 0 1.2 0.95 8 5 1 2 40 3 45");
    const auto first = p.answer();
    EXPECT_EQ(tokens_of(first), generate_tokens("1,2,40,3,45", "--max-tokens 6 --temperature 1.2 --top-k 8 --top-p 0.95 --seed 9"));
    p.send("TURN 6 0 1.2 0.95 8 5 1 2 40 3 45");  // keep 0: the same request again, the same answer
    EXPECT_EQ(p.answer(), first);
}

TEST(CliPipe, ResetForgetsEveryPosition) {
    PipeProcess p({"--model", demo_dir()});
    ASSERT_TRUE(p.line().starts_with("READY"));
    p.send("TURN 12 0 0 1 0 4 3 40 8 45");
    ASSERT_TRUE(p.answer().back().starts_with("DONE"));
    p.send("RESET");
    p.send("TURN 12 1 0 1 0 1 5");
    EXPECT_EQ(p.answer(), std::vector<std::string>{"ERROR bad_keep 0 keep 1 is beyond the session's position 0"});
    p.send("TURN 1 0 0 1 0 4 3 40 8 45");
    EXPECT_EQ(p.answer().back(), "DONE MAX_TOKENS 1 4");
}

TEST(CliPipe, AFullContextEndsTheTurnWithContextFull) {
    PipeProcess p({"--model", demo_dir(), "--context", "10"});
    EXPECT_EQ(p.line(), "READY 10 64 48");
    // 10 - 8 = 2 tokens fit of the demo's "579<|end|>".
    p.send("TURN 50 0 0 1 0 8 1 2 3 40 4 5 6 45");
    EXPECT_EQ(p.answer(), (std::vector<std::string>{"TOKEN 5", "TOKEN 7", "DONE CONTEXT_FULL 2 9"}));
    // Ids that fill the context exactly are consumed, with no room for a token.
    p.send("TURN 50 0 0 1 0 10 1 2 3 40 4 5 6 45 5 7");
    EXPECT_EQ(p.answer(), std::vector<std::string>{"DONE CONTEXT_FULL 0 10"});
    p.send("TURN 50 0 0 1 0 11 1 2 3 40 4 5 6 45 5 7 9");
    EXPECT_EQ(p.answer(), std::vector<std::string>{"ERROR context_full 0 keep 0 + 11 ids exceed the context of 10"});
}

TEST(CliPipe, AModelThatCannotLoadSaysSoOnTheProtocolAndExitsOne) {
    const auto r = stormo::test::run_cli("pipe --model /nonexistent/model </dev/null");
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.out.starts_with("ERROR load 1 ")) << r.out;
    EXPECT_NE(r.out.find("/nonexistent/model"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("stormo: "), std::string::npos);
}

}  // namespace
}  // namespace stormo::testing
