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

    // A regular file for reading; a missing file is ErrorKind::missing. Opened without blocking,
    // so a FIFO or a device is refused instead of hanging in open.
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
// error that names the cap and `kind` (a stray /dev/zero or a huge file must not grow memory
// without bound).
inline constexpr uint64_t kDefaultReadCap = uint64_t{256} << 20;
// Caps per kind of file, far above any real one of its kind.
inline constexpr uint64_t kConfigReadCap = uint64_t{16} << 20;      // config.json, generation_config.json, YAML
inline constexpr uint64_t kIndexReadCap = uint64_t{64} << 20;       // model.safetensors.index.json
inline constexpr uint64_t kIdsReadCap = uint64_t{64} << 20;         // --ids-file
inline constexpr uint64_t kTraceReadCap = uint64_t{256} << 20;      // cache-sim --trace
STORMO_API Expected<std::string> read_file(const std::string& path, uint64_t max_bytes = kDefaultReadCap,
                                           std::string_view kind = "such a file");
// Reads an open stream (a pipe, stdin) to its end, refusing more than max_bytes; `name` names it.
STORMO_API Expected<std::string> read_stream(int fd, const std::string& name, uint64_t max_bytes, std::string_view kind);
// The caller checks an output path before any work: not empty, not a directory, its directory
// exists. Creates nothing. `option` names the path in errors ("--out"). A dangling symlink is
// checked where it points: writing creates the file there.
STORMO_API Expected<void> check_output_path(const std::string& path, const std::string& option);
// The path at the end of the chain of symlinks `path` names (relative links resolved against
// their own directory), or `path` when it is no symlink; the last name even when it does not
// exist, which is where open(O_CREAT) creates a file through a dangling symlink.
STORMO_API std::string symlink_end(const std::string& path);

// Asks the kernel to drop the file's pages from the page cache (posix_fadvise DONTNEED over the
// whole file). A hint: a file that cannot be opened, or pages someone maps, simply stay.
STORMO_API void drop_page_cache(const std::string& path);

// Appends to a file (created if missing); the write and the close are checked.
STORMO_API Expected<void> append_file(const std::string& path, std::string_view content);

// Writes a whole file, replacing any previous content.
STORMO_API Expected<void> write_file(const std::string& path, std::string_view content);

}  // namespace stormo
