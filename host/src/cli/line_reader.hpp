#pragma once
// Lines from a file descriptor (the chat's stdin), read with read(2) so a Ctrl-C while waiting for
// input interrupts the wait instead of being lost in a restarted read.
#include <atomic>
#include <string>

namespace stormo::cli {

class LineReader {
public:
    // `interrupted`: the flag a SIGINT handler sets; a signal that lands just before a read started
    // cannot be lost, since the wait polls the flag.
    LineReader(int fd, const std::atomic<bool>& interrupted) : fd_(fd), interrupted_(&interrupted) {}
    enum class Status { line, interrupted, end };
    // The next line without its newline (a last line without one counts); `interrupted` when a
    // signal arrived while waiting, `end` at the end of input or on a read error.
    Status next(std::string& line);

private:
    int fd_;
    const std::atomic<bool>* interrupted_;
    std::string buffer_;
    bool eof_ = false;
};

}  // namespace stormo::cli
