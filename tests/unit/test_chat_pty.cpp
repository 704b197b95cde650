// `stormo chat` driven through a pseudo-terminal, as a person types: questions answered turn after
// turn in one conversation, Ctrl-C at the prompt does not end the program, /stats, /reset, /quit.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>

namespace {

class PtyProcess {
public:
    explicit PtyProcess(const std::vector<std::string>& argv) {
        pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
        if (pid_ == 0) {
            unsetenv("STORMO_PLUGIN_PATH");
            std::vector<char*> args;
            for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
            args.push_back(nullptr);
            execv(args[0], args.data());
            _exit(127);
        }
    }
    ~PtyProcess() {
        if (pid_ > 0 && !exited_) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        if (master_ >= 0) close(master_);
    }
    bool started() const { return pid_ > 0 && master_ >= 0; }
    void type(const std::string& keys) { ASSERT_EQ(write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size())); }
    // Reads until `marker` appears in what came after the last call, or the timeout; returns that text.
    std::string read_until(const std::string& marker, int timeout_ms = 60000) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        while (pending_.find(marker) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
            pollfd p{master_, POLLIN, 0};
            if (poll(&p, 1, 200) <= 0) continue;
            char buf[4096];
            const ssize_t n = read(master_, buf, sizeof buf);
            if (n <= 0) {
                // EIO once the child is gone; anything else is transient.
                if (reaped()) break;
                usleep(10000);
                continue;
            }
            pending_.append(buf, static_cast<size_t>(n));
        }
        const size_t at = pending_.find(marker);
        const size_t end = at == std::string::npos ? pending_.size() : at + marker.size();
        std::string seen = pending_.substr(0, end);
        pending_.erase(0, end);
        return seen;
    }
    int wait_exit() {
        for (int i = 0; i < 600; ++i) {
            read_until("\x01", 100);  // keep draining so the child never blocks on a full pty
            if (reaped()) return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
        }
        return -2;
    }

private:
    bool reaped() {
        if (!exited_ && waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
        return exited_;
    }
    int status_ = 0;
    pid_t pid_ = -1;
    int master_ = -1;
    bool exited_ = false;
    std::string pending_;
};

TEST(ChatPty, ADemoAnswersProblemAfterProblemAndSurvivesCtrlC) {
    PtyProcess chat({STORMO_CLI, "chat", "--model", std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo"});
    ASSERT_TRUE(chat.started());
    EXPECT_NE(chat.read_until("> ").find("/reset"), std::string::npos) << "the chat greets with its commands";

    chat.type("123+456=\r");
    EXPECT_NE(chat.read_until("> ").find("579"), std::string::npos);
    chat.type("rev:hello=\r");
    EXPECT_NE(chat.read_until("> ").find("olleh"), std::string::npos);

    chat.type("\x03");  // Ctrl-C at the prompt: a hint, not the end
    EXPECT_NE(chat.read_until("> ").find("Ctrl-C stops an answer"), std::string::npos);

    chat.type("/stats\r");
    const std::string stats = chat.read_until("> ");
    EXPECT_NE(stats.find("turns 2"), std::string::npos) << stats;
    chat.type("/reset\r");
    EXPECT_NE(chat.read_until("> ").find("new conversation"), std::string::npos);
    chat.type("sort:dcab=\r");
    EXPECT_NE(chat.read_until("> ").find("abcd"), std::string::npos);
    chat.type("/quit\r");
    EXPECT_EQ(chat.wait_exit(), 0);
}

// A conversation that runs out of context, as a person meets it: the answer that fills the context
// says so and how to get more, the next message is refused with /reset among the ways out, and
// /reset starts over with /stats counting from zero. The demo's prompt "123+456=" is 8 tokens
// (its template adds nothing), so a context of 10 leaves the answer 2 of its 4 tokens.
TEST(ChatPty, AConversationThatRunsOutOfContextSaysSoAndResetStartsOver) {
    PtyProcess chat({STORMO_CLI, "chat", std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo", "--context", "10"});
    ASSERT_TRUE(chat.started());
    chat.read_until("> ");

    chat.type("123+456=\r");
    const std::string full = chat.read_until("> ");
    EXPECT_NE(full.find("57"), std::string::npos) << full;
    EXPECT_NE(full.find("context full (10 positions; /reset starts over, --context raises it)"), std::string::npos) << full;
    EXPECT_EQ(full.find("token limit"), std::string::npos) << full;

    chat.type("1+1=\r");
    const std::string refused = chat.read_until("> ");
    EXPECT_NE(refused.find("the context holds 10 (/reset starts over, --context raises it)"), std::string::npos) << refused;

    chat.type("/stats\r");
    const std::string before = chat.read_until("> ");
    EXPECT_NE(before.find("turns 1, context "), std::string::npos) << before;
    EXPECT_NE(before.find(" of 10 positions held"), std::string::npos) << before;
    EXPECT_EQ(before.find("experts 0 hits"), std::string::npos) << "the turn used experts: " << before;

    chat.type("/reset\r");
    EXPECT_NE(chat.read_until("> ").find("new conversation"), std::string::npos);
    chat.type("/stats\r");
    const std::string after = chat.read_until("> ");
    EXPECT_NE(after.find("turns 0, context 0 of 10 positions held; experts 0 hits, 0 misses, 0 B read; KV replays 0"),
              std::string::npos)
        << after;

    chat.type("123+456=\r");
    EXPECT_NE(chat.read_until("> ").find("context full (10 positions;"), std::string::npos);
    chat.type("/quit\r");
    EXPECT_EQ(chat.wait_exit(), 0);
}

}  // namespace
