#include "util/direct_appender.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stormo {
namespace {

constexpr size_t kAlign = 4096;
constexpr size_t kWindow = size_t{8} << 20;

Expected<void> pwrite_all(int fd, const char* data, size_t size, uint64_t offset, const std::string& path) {
    while (size > 0) {
        const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = n < 0 ? errno : ENOSPC;
            return fail(ErrorKind::io, "writing " + path + ": " + (err == ENOSPC ? std::string("no space left on the device") : std::strerror(err)));
        }
        data += n;
        size -= static_cast<size_t>(n);
        offset += static_cast<uint64_t>(n);
    }
    return {};
}

}  // namespace

std::unique_ptr<DirectAppender> DirectAppender::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) return nullptr;
    std::unique_ptr<DirectAppender> a(new DirectAppender());
    a->path_ = path;
    a->fd_ = FileDescriptor(fd);
    for (auto& w : a->windows_) w = AlignedBuffer(kWindow, kAlign);
    a->writer_ = std::jthread([p = a.get()] { p->write_loop(); });
    return a;
}

DirectAppender::~DirectAppender() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    changed_.notify_all();
}

void DirectAppender::write_loop() {
    for (;;) {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return pending_ || stop_; });
        if (!pending_) return;
        const size_t window = pending_window_, bytes = pending_bytes_;
        const uint64_t offset = pending_offset_;
        lock.unlock();
        auto wrote = error_ ? Expected<void>{} : pwrite_all(fd_.get(), reinterpret_cast<const char*>(windows_[window].data()), bytes, offset, path_);
        lock.lock();
        if (!wrote && !error_) error_ = wrote.error();
        pending_ = false;
        lock.unlock();
        changed_.notify_all();
    }
}

Expected<void> DirectAppender::hand_over() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !pending_; });
    if (error_) return tl::unexpected(*error_);
    pending_ = true;
    pending_window_ = filling_;
    pending_bytes_ = (fill_ + kAlign - 1) / kAlign * kAlign;
    pending_offset_ = file_offset_;
    lock.unlock();
    changed_.notify_all();
    file_offset_ += fill_;
    filling_ ^= 1;
    fill_ = 0;
    return {};
}

Expected<void> DirectAppender::append(const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const size_t n = std::min(size, kWindow - fill_);
        std::memcpy(reinterpret_cast<char*>(windows_[filling_].data()) + fill_, p, n);
        fill_ += n;
        appended_ += n;
        p += n;
        size -= n;
        if (fill_ == kWindow) STORMO_TRY(hand_over());
    }
    return {};
}

Expected<uint64_t> DirectAppender::finish() {
    if (fill_ > 0) {
        // The tail is written whole blocks long (zeros after the bytes), then cut to its length.
        std::memset(reinterpret_cast<char*>(windows_[filling_].data()) + fill_, 0, (fill_ + kAlign - 1) / kAlign * kAlign - fill_);
        STORMO_TRY(hand_over());
    }
    {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [this] { return !pending_; });
        if (error_) return tl::unexpected(*error_);
    }
    if (::ftruncate(fd_.get(), static_cast<off_t>(appended_)) != 0)
        return fail(ErrorKind::io, "writing " + path_ + ": " + std::strerror(errno));
    return appended_;
}

}  // namespace stormo
