#pragma once
// POSIX file access with errors as values: an owned descriptor, exact positional reads, whole
// writes, and small whole-file reads (JSON files). Every error names the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

// Owns one file descriptor (opened with O_CLOEXEC); move-only, closed on destruction.
class STORMO_API FileDescriptor {
public:
    FileDescriptor() = default;
    explicit FileDescriptor(int fd) : fd_(fd) {}
    ~FileDescriptor();
    FileDescriptor(FileDescriptor&& o) noexcept;
    FileDescriptor& operator=(FileDescriptor&& o) noexcept;
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;

    // A regular file for reading; a missing file is ErrorKind::missing.
    static Expected<FileDescriptor> open_read(const std::string& path);
    // Creates or truncates a file for writing (mode 0644).
    static Expected<FileDescriptor> create(const std::string& path);

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    Expected<uint64_t> size(const std::string& path) const;  // path only names the file in errors
    // Closes now and reports the result (a written file's last error can surface only here).
    Expected<void> close(const std::string& path);

private:
    int fd_ = -1;
};

// The size of an open file; `path` names it in errors.
STORMO_API Expected<uint64_t> file_size(int fd, const std::string& path);

// Reads exactly `size` bytes at `offset`, looping over short reads and EINTR. Hitting the end of the
// file first is an error. `what` names the file (and tensor) in messages.
STORMO_API Expected<void> pread_exact(int fd, void* dst, uint64_t size, uint64_t offset, const std::string& what);

// Writes all bytes, looping over short writes and EINTR.
STORMO_API Expected<void> write_all(int fd, const void* src, size_t size, const std::string& what);

// Reads a whole (small) regular file into memory; a file larger than max_bytes is refused with an
// error that names the cap (a stray /dev/zero or a huge file must not grow memory without bound).
inline constexpr uint64_t kDefaultReadCap = uint64_t{256} << 20;
STORMO_API Expected<std::string> read_file(const std::string& path, uint64_t max_bytes = kDefaultReadCap);

// Writes a whole file, replacing any previous content.
STORMO_API Expected<void> write_file(const std::string& path, std::string_view content);

}  // namespace stormo
