#pragma once
// Progress of long steps (a prefill of thousands of positions, a benchmark) on stderr, only when
// stderr is a terminal: one line rewritten in place, cleared when the step ends, so logs and
// pipes see nothing of it.
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <iostream>
#include <string>

namespace stormo::cli {

class TerminalProgress {
public:
    explicit TerminalProgress(bool enabled = ::isatty(STDERR_FILENO) == 1) : enabled_(enabled) {}
    ~TerminalProgress() { clear(); }
    TerminalProgress(const TerminalProgress&) = delete;
    TerminalProgress& operator=(const TerminalProgress&) = delete;

    bool enabled() const { return enabled_; }

    // "stormo: <what> <done>/<total>", at most every 100 ms, and always the last step.
    void update(const std::string& what, size_t done, size_t total) {
        if (!enabled_) return;
        const auto now = std::chrono::steady_clock::now();
        if (shown_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        shown_ = true;
        std::cerr << "\r\x1b[Kstormo: " << what << " " << done << "/" << total << std::flush;
    }

    // A step without a count ("measuring the RAM bandwidth").
    void note(const std::string& what) {
        if (!enabled_) return;
        shown_ = true;
        std::cerr << "\r\x1b[Kstormo: " << what << "..." << std::flush;
    }

    void clear() {
        if (!enabled_ || !shown_) return;
        shown_ = false;
        std::cerr << "\r\x1b[K" << std::flush;
    }

private:
    bool enabled_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace stormo::cli
