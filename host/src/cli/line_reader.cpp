#include "cli/line_reader.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace stormo::cli {
namespace {
constexpr int kFlagCheckMs = 100;
}  // namespace

LineReader::Status LineReader::next(std::string& line) {
    for (;;) {
        const size_t nl = buffer_.find('\n');
        if (nl != std::string::npos || eof_) {
            const size_t length = nl != std::string::npos ? nl : buffer_.size();
            if (!skipping_ && length == 0 && nl == std::string::npos) return Status::end;
            const size_t whole = skipped_bytes_ + length;
            line = skipping_ || whole > max_line_bytes_ ? std::string() : buffer_.substr(0, length);
            buffer_.erase(0, nl != std::string::npos ? nl + 1 : buffer_.size());
            const bool too_long = skipping_ || whole > max_line_bytes_;
            skipping_ = false;
            skipped_bytes_ = 0;
            if (!too_long) return Status::line;
            too_long_bytes_ = whole;
            return Status::too_long;
        }
        if (buffer_.size() > max_line_bytes_) {
            // Too long already: count the rest of the line without keeping it.
            skipping_ = true;
            skipped_bytes_ += buffer_.size();
            buffer_.clear();
        }
        if (interrupted_->load()) return Status::interrupted;
        pollfd ready{fd_, POLLIN, 0};
        const int polled = ::poll(&ready, 1, kFlagCheckMs);
        if (polled < 0 && errno == EINTR) return Status::interrupted;
        if (polled == 0) continue;
        char chunk[4096];
        const ssize_t n = ::read(fd_, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) return Status::interrupted;
        if (n <= 0) {
            eof_ = true;
            continue;
        }
        buffer_.append(chunk, static_cast<size_t>(n));
    }
}

}  // namespace stormo::cli
