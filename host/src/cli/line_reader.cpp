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
        if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
            line = buffer_.substr(0, nl);
            buffer_.erase(0, nl + 1);
            return Status::line;
        }
        if (eof_) {
            if (buffer_.empty()) return Status::end;
            line = std::move(buffer_);
            buffer_.clear();
            return Status::line;
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
