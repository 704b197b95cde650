#pragma once
// Progress of long steps (loading a model, a prefill of thousands of positions, a benchmark) on stderr, only when
// stderr is a terminal: one line rewritten in place, cleared when the step ends, so logs and
// pipes see nothing of it.
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <iostream>
#include <string>

#include "util/format_bytes.hpp"

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

    // "stormo: <what> 1.20 GiB of 12.8 GiB (9%), about 1 min 20 s left": bytes done of bytes to
    // do, with the time left at the rate so far; at most every 100 ms, and always the last step.
    void bytes(const std::string& what, uint64_t done, uint64_t total) {
        if (!enabled_) return;
        const auto now = std::chrono::steady_clock::now();
        if (!started_) {
            started_ = true;
            start_ = now;
        }
        if (shown_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
        last_ = now;
        shown_ = true;
        std::cerr << "\r\x1b[Kstormo: " << what << " " << format_bytes(done) << " of " << format_bytes(total) << " ("
                  << percent(done, total) << "%)";
        const double elapsed = std::chrono::duration<double>(now - start_).count();
        if (done > 0 && done < total && elapsed >= 1.0)
            std::cerr << ", about " << duration_text(elapsed * static_cast<double>(total - done) / static_cast<double>(done))
                      << " left";
        std::cerr << std::flush;
    }

    // A whole percentage that reaches 100 only when everything is done.
    static unsigned percent(uint64_t done, uint64_t total) {
        if (total == 0 || done >= total) return 100;
        return static_cast<unsigned>(static_cast<double>(done) * 100.0 / static_cast<double>(total));
    }
    // "45 s", "3 min 05 s", "1 h 02 min".
    static std::string duration_text(double seconds) {
        const auto s = static_cast<uint64_t>(seconds + 0.5);
        const auto two = [](uint64_t v) { return (v < 10 ? "0" : "") + std::to_string(v); };
        if (s < 60) return std::to_string(s) + " s";
        if (s < 3600) return std::to_string(s / 60) + " min " + two(s % 60) + " s";
        return std::to_string(s / 3600) + " h " + two(s / 60 % 60) + " min";
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
    bool started_ = false;
    std::chrono::steady_clock::time_point start_{};
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace stormo::cli
