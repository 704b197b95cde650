#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace stormo {
namespace {

constexpr std::string_view kTempMarker = ".stormo-tmp-";

std::string errno_text(int err) {
    if (err == ENOSPC) return "no space left on the device";
    if (err == EDQUOT) return "the disk quota is exhausted";
    if (err == EFBIG) return "the file is larger than this process may write";
    return std::strerror(err);
}

// Distinct temporary names for writers of one process (a counter, not state anyone reads back).
std::string temp_name_for(const std::string& path) {
    static std::atomic<uint64_t> counter{0};
    const std::filesystem::path p(path);
    std::string name(1, '.');
    name.append(p.filename().string()).append(kTempMarker).append(std::to_string(::getpid()));
    name.append(1, '-').append(std::to_string(counter.fetch_add(1)));
    return (p.parent_path() / name).string();
}

}  // namespace

Expected<void> fsync_directory(const std::string& path, const std::string& what) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    const std::string dir = parent.empty() ? std::string(1, '.') : parent.string();
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fail(ErrorKind::io, what + ": cannot open its directory " + dir + ": " + errno_text(errno));
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    // Some file systems cannot sync a directory (EINVAL); the rename itself is done.
    if (rc != 0 && err != EINVAL) return fail(ErrorKind::io, what + ": flushing its directory " + dir + ": " + errno_text(err));
    return {};
}

bool is_atomic_temp_name(std::string_view file_name) {
    return file_name.starts_with(".") && file_name.find(kTempMarker) != std::string_view::npos;
}

Expected<size_t> remove_stale_temp_files(const std::string& path) {
    const std::filesystem::path p(path);
    std::string prefix(1, '.');
    prefix.append(p.filename().string()).append(kTempMarker);
    const std::filesystem::path dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec);
    if (ec) return fail(ErrorKind::io, dir.string() + ": " + ec.message());
    size_t removed = 0;
    for (const auto& entry : it) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with(prefix)) continue;
        // ".NAME.stormo-tmp-PID-N": a writer that still runs is left to finish.
        const std::string rest = name.substr(prefix.size());
        const size_t dash = rest.find('-');
        if (dash == 0 || dash == std::string::npos || rest.find_first_not_of("0123456789") != dash) continue;
        const auto pid = static_cast<pid_t>(std::stoll(rest.substr(0, dash)));
        if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
        if (std::filesystem::remove(entry.path(), ec)) ++removed;
    }
    return removed;
}

Expected<AtomicFileWriter> AtomicFileWriter::create(const std::string& path, std::string what) {
    AtomicFileWriter w;
    w.path_ = path;
    w.what_ = std::move(what);
    w.temp_path_ = temp_name_for(path);
    int fd;
    do fd = ::open(w.temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        const int err = errno;
        w.temp_path_.clear();
        return fail(ErrorKind::io, w.what_ + ": cannot create a file beside " + path + ": " + errno_text(err));
    }
    w.fd_ = FileDescriptor(fd);
    return w;
}

AtomicFileWriter::~AtomicFileWriter() { discard(); }

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& o) noexcept
    : path_(std::move(o.path_)), temp_path_(std::exchange(o.temp_path_, {})), what_(std::move(o.what_)), fd_(std::move(o.fd_)),
      written_(o.written_) {}

AtomicFileWriter& AtomicFileWriter::operator=(AtomicFileWriter&& o) noexcept {
    if (this != &o) {
        discard();
        path_ = std::move(o.path_);
        temp_path_ = std::exchange(o.temp_path_, {});
        what_ = std::move(o.what_);
        fd_ = std::move(o.fd_);
        written_ = o.written_;
    }
    return *this;
}

void AtomicFileWriter::discard() {
    if (temp_path_.empty()) return;
    fd_ = FileDescriptor();
    ::unlink(temp_path_.c_str());
    temp_path_.clear();
}

Expected<void> AtomicFileWriter::write(const void* data, size_t size) {
    if (temp_path_.empty()) return fail(ErrorKind::internal, what_ + ": written after it was committed or failed");
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        // Pieces of at most 1 GiB: Linux writes at most about 2 GiB at once.
        const ssize_t n = ::write(fd_.get(), p, std::min<size_t>(size, size_t{1} << 30));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const int err = n < 0 ? errno : ENOSPC;
            discard();
            return fail(ErrorKind::io, what_ + ": writing " + path_ + ": " + errno_text(err));
        }
        p += n;
        size -= static_cast<size_t>(n);
        written_ += static_cast<uint64_t>(n);
    }
    return {};
}

Expected<void> AtomicFileWriter::commit() {
    if (temp_path_.empty()) return fail(ErrorKind::internal, what_ + ": committed twice or after a failed write");
    if (::fsync(fd_.get()) != 0) {
        const int err = errno;
        discard();
        return fail(ErrorKind::io, what_ + ": flushing " + path_ + " to the disk: " + errno_text(err));
    }
    if (auto closed = fd_.close(temp_path_); !closed) {
        discard();
        return fail(ErrorKind::io, what_ + ": " + closed.error().message);
    }
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        discard();
        return fail(ErrorKind::io, what_ + ": renaming over " + path_ + ": " + errno_text(err));
    }
    temp_path_.clear();
    return fsync_directory(path_, what_);
}

}  // namespace stormo
