#pragma once
// `stormo pipe` as a child process on two pipes, driven as an embedding program drives it: one line
// written, the answer lines read as they come (each with a deadline), the exit status or a kill.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace stormo::testing {

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
    // Lines up to and including the next DONE, ERROR, SAVED or LOADED.
    std::vector<std::string> answer() {
        std::vector<std::string> lines;
        for (;;) {
            lines.push_back(line());
            const std::string& l = lines.back();
            if (l.starts_with("DONE") || l.starts_with("ERROR") || l.starts_with("SAVED") || l.starts_with("LOADED") ||
                l.starts_with("<"))
                return lines;
        }
    }
    pid_t pid() const { return pid_; }
    // SIGKILL now; the child is reaped.
    void kill_now() {
        if (pid_ <= 0 || reaped_) return;
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        reaped_ = true;
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

}  // namespace stormo::testing
