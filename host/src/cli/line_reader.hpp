#pragma once
// Lines from a file descriptor (the chat's stdin), read with read(2) so a Ctrl-C while waiting for
// input interrupts the wait instead of being lost in a restarted read.
#include <atomic>
#include <cstddef>
#include <string>

namespace stormo::cli {

class LineReader {
public:
    // `interrupted`: the flag a SIGINT handler sets; a signal that lands just before a read started
    // cannot be lost, since the wait polls the flag. A line longer than `max_line_bytes` is not
    // held: it is read to its end and reported as too long (a 10 GB line without a newline must not
    // fill the memory).
    LineReader(int fd, const std::atomic<bool>& interrupted, size_t max_line_bytes)
        : fd_(fd), interrupted_(&interrupted), max_line_bytes_(max_line_bytes) {}
    enum class Status { line, too_long, interrupted, end };
    // The next line without its newline (a last line without one counts); `too_long` for a line
    // over the limit, whose length (without the newline) is then too_long_bytes(); `interrupted`
    // when a signal arrived while waiting, `end` at the end of input or on a read error.
    Status next(std::string& line);
    size_t too_long_bytes() const { return too_long_bytes_; }

private:
    int fd_;
    const std::atomic<bool>* interrupted_;
    size_t max_line_bytes_;
    std::string buffer_;
    bool eof_ = false;
    bool skipping_ = false;     // inside a line over the limit, not kept
    size_t skipped_bytes_ = 0;  // of that line so far
    size_t too_long_bytes_ = 0;
};

}  // namespace stormo::cli
