// POSIX file helpers; see file.hpp.
#include "util/file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

namespace stormo {
namespace {

std::string os_error(int err) { return std::strerror(err); }

}  // namespace

FileDescriptor::~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
}

FileDescriptor::FileDescriptor(FileDescriptor&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
}

namespace {

// What a path is when it is not a regular file, for the error.
const char* file_type_name(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

}  // namespace

Expected<FileDescriptor> FileDescriptor::open_read(const std::string& path) {
    int fd;
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    do fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        const int err = errno;
        const ErrorKind kind = err == ENOENT ? ErrorKind::missing : ErrorKind::io;
        return fail(kind, path + ": cannot open: " + os_error(err));
    }
    FileDescriptor file(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail(ErrorKind::io, path + ": cannot stat: " + os_error(errno));
    if (!S_ISREG(st.st_mode))
        return fail(ErrorKind::io, path + ": is " + file_type_name(st.st_mode) + ", not a regular file");
    // Regular files ignore O_NONBLOCK for reads, but clear it so nothing depends on that.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return file;
}

Expected<FileDescriptor> FileDescriptor::create(const std::string& path) {
    int fd;
    do fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail(ErrorKind::io, path + ": cannot create: " + os_error(errno));
    return FileDescriptor(fd);
}

Expected<uint64_t> FileDescriptor::size(const std::string& path) const { return file_size(fd_, path); }

Expected<uint64_t> file_size(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail(ErrorKind::io, path + ": cannot stat: " + os_error(errno));
    return static_cast<uint64_t>(st.st_size);
}

Expected<void> FileDescriptor::close(const std::string& path) {
    if (fd_ < 0) return {};
    // Linux releases the descriptor even when close fails, so it is never retried.
    const int result = ::close(std::exchange(fd_, -1));
    if (result != 0 && errno != EINTR) return fail(ErrorKind::io, path + ": close failed: " + os_error(errno));
    return {};
}

Expected<void> pread_exact(int fd, void* dst, uint64_t size, uint64_t offset, const std::string& what) {
    auto* out = static_cast<std::byte*>(dst);
    uint64_t done = 0;
    while (done < size) {
        // Linux transfers at most 0x7ffff000 bytes per call; ask for no more than 1 GiB at once.
        const uint64_t chunk = std::min<uint64_t>(size - done, uint64_t{1} << 30);
        const ssize_t n = ::pread(fd, out + done, chunk, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(ErrorKind::io, what + ": read of " + std::to_string(size) + " bytes at offset " +
                                           std::to_string(offset) + " failed: " + os_error(errno));
        }
        if (n == 0)
            return fail(ErrorKind::io, what + ": unexpected end of file after " + std::to_string(done) + " of " +
                                           std::to_string(size) + " bytes at offset " + std::to_string(offset));
        done += static_cast<uint64_t>(n);
    }
    return {};
}

Expected<void> write_all(int fd, const void* src, size_t size, const std::string& what) {
    const auto* in = static_cast<const std::byte*>(src);
    size_t done = 0;
    while (done < size) {
        const size_t chunk = std::min<size_t>(size - done, size_t{1} << 30);
        const ssize_t n = ::write(fd, in + done, chunk);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(ErrorKind::io, what + ": write failed: " + os_error(errno));
        }
        done += static_cast<size_t>(n);
    }
    return {};
}

namespace {

Error too_large(const std::string& name, std::string_view size, uint64_t max_bytes, std::string_view kind) {
    return Error{ErrorKind::resource, name + ": " + std::string(size) + " bytes, more than the " +
                                          std::to_string(max_bytes) + " bytes stormo reads from " + std::string(kind)};
}

}  // namespace

Expected<std::string> read_file(const std::string& path, uint64_t max_bytes, std::string_view kind) {
    STORMO_TRY_ASSIGN(auto file, FileDescriptor::open_read(path));
    STORMO_TRY_ASSIGN(auto size, file.size(path));
    if (size > max_bytes) return tl::unexpected(too_large(path, std::to_string(size), max_bytes, kind));
    std::string content(size, '\0');
    STORMO_TRY(pread_exact(file.get(), content.data(), size, 0, path));
    return content;
}

Expected<std::string> read_stream(int fd, const std::string& name, uint64_t max_bytes, std::string_view kind) {
    std::string content;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(ErrorKind::io, name + ": read failed: " + os_error(errno));
        }
        if (n == 0) return content;
        if (content.size() + static_cast<size_t>(n) > max_bytes)
            return fail(ErrorKind::resource, name + ": longer than the " + std::to_string(max_bytes) +
                                                 " bytes stormo reads from " + std::string(kind));
        content.append(buf, static_cast<size_t>(n));
    }
}

std::string symlink_end(const std::string& path) {
    std::string p = path;
    // 40: Linux's own limit on links followed in one lookup (a loop ends here too).
    for (int hops = 0; hops < 40; ++hops) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
        std::string target(PATH_MAX, '\0');
        const ssize_t n = ::readlink(p.c_str(), target.data(), target.size());
        if (n < 0 || static_cast<size_t>(n) >= target.size()) return p;
        target.resize(static_cast<size_t>(n));
        const size_t slash = p.rfind('/');
        p = target.front() == '/' || slash == std::string::npos ? target : p.substr(0, slash + 1) + target;
    }
    return p;
}

Expected<void> check_output_path(const std::string& path, const std::string& option) {
    if (path.empty()) return fail(ErrorKind::invalid_argument, option + ": needs a file name, got an empty one");
    struct stat st {};
    const bool existed = ::stat(path.c_str(), &st) == 0;
    if (!existed && errno != ENOENT)  // a symlink loop, a path through a file, no search permission
        return fail(ErrorKind::io, option + " " + path + ": cannot be written: " + os_error(errno));
    if (existed && S_ISDIR(st.st_mode))
        return fail(ErrorKind::invalid_argument, option + " " + path + ": is a directory, not a file");
    // A dangling symlink is written through, as a shell's > does: the file is created where the
    // link points, so that is the name to try (O_EXCL would refuse the link itself).
    const std::string target = existed ? path : symlink_end(path);
    const std::string shown = target == path ? path : path + " (a symlink to " + target + ", which does not exist)";
    // Opening is the only test that holds for every user (root passes access()) and file system
    // (/proc refuses new files): an existing file is opened for writing without truncating it, a
    // new one is created and removed again.
    int fd;
    do fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK | (existed ? 0 : O_CREAT | O_EXCL), 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail(ErrorKind::io, option + " " + shown + ": cannot be written: " + os_error(errno));
    ::close(fd);
    if (!existed) ::unlink(target.c_str());
    return {};
}

void drop_page_cache(const std::string& path) {
    auto fd = FileDescriptor::open_read(path);
    if (fd) ::posix_fadvise(fd->get(), 0, 0, POSIX_FADV_DONTNEED);
}

Expected<void> append_file(const std::string& path, std::string_view content) {
    int fd;
    do fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return fail(ErrorKind::io, path + ": cannot open for appending: " + os_error(errno));
    FileDescriptor file(fd);
    if (auto r = write_all(file.get(), content.data(), content.size(), path); !r) return r;
    return file.close(path);
}

Expected<void> write_file(const std::string& path, std::string_view content) {
    STORMO_TRY_ASSIGN(auto file, FileDescriptor::create(path));
    if (auto r = write_all(file.get(), content.data(), content.size(), path); !r) return r;
    return file.close(path);
}

}  // namespace stormo
