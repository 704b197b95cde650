#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "store/read_backend.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

constexpr size_t kDirectAlignment = 4096;

class PreadBackend final : public ReadBackend {
public:
    Expected<void> open_all(const std::vector<std::string>& files, bool want_direct) {
        direct_ = want_direct;
        for (const auto& path : files) {
            if (fds_.count(path)) continue;
            int fd = -1;
            if (direct_) {
                fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
                // File systems without O_DIRECT (tmpfs, some overlays) refuse it: read buffered.
                if (fd < 0 && errno == EINVAL) direct_ = false;
            }
            if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) return fail(ErrorKind::io, path + ": cannot open for expert reads: " + std::strerror(errno));
            fds_.emplace(path, FileDescriptor(fd));
        }
        // One buffered descriptor makes every read buffered, so the stats say one thing.
        if (!direct_)
            for (auto& [path, fd] : fds_) {
                const int flags = ::fcntl(fd.get(), F_GETFL);
                if (flags >= 0 && (flags & O_DIRECT)) ::fcntl(fd.get(), F_SETFL, flags & ~O_DIRECT);
            }
        return {};
    }

    Expected<size_t> read(const std::string& file, uint64_t offset, size_t size, void* dst) override {
        auto it = fds_.find(file);
        if (it == fds_.end()) return fail(ErrorKind::internal, file + ": not opened by the expert store");
        size_t done = 0;
        while (done < size) {
            const ssize_t n = ::pread(it->second.get(), static_cast<char*>(dst) + done, size - done,
                                      static_cast<off_t>(offset + done));
            if (n < 0) {
                if (errno == EINTR) continue;
                return fail(ErrorKind::io, file + ": read of " + std::to_string(size) + " bytes at offset " +
                                               std::to_string(offset) + " failed: " + std::strerror(errno));
            }
            if (n == 0) break;  // end of file
            done += static_cast<size_t>(n);
            // A direct read that stops short of the request mid-file can only resume aligned.
            if (direct_ && done % kDirectAlignment != 0) break;
        }
        return done;
    }

    void drop_cached(const std::string& file, uint64_t offset, uint64_t size) override {
        auto it = fds_.find(file);
        if (it != fds_.end())
            ::posix_fadvise(it->second.get(), static_cast<off_t>(offset), static_cast<off_t>(size), POSIX_FADV_DONTNEED);
    }

    bool direct_io() const override { return direct_; }
    size_t alignment() const override { return direct_ ? kDirectAlignment : 1; }

private:
    bool direct_ = false;
    std::map<std::string, FileDescriptor> fds_;
};

}  // namespace

Expected<std::unique_ptr<ReadBackend>> make_pread_backend(const std::vector<std::string>& files, bool want_direct_io) {
    auto backend = std::make_unique<PreadBackend>();
    STORMO_TRY(backend->open_all(files, want_direct_io));
    return std::unique_ptr<ReadBackend>(std::move(backend));
}

}  // namespace stormo
