#pragma once
// Appends bytes to a file past the page cache (O_DIRECT): they are copied into aligned windows,
// which a second thread writes while the next one fills, so copying and the disk's work overlap
// and the file's bytes never take a second copy in the page cache. Used for large files written
// once and read rarely (session files). A file system that refuses direct writes is reported by
// open(), for the caller to write through the page cache instead.
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "stormo/error.hpp"
#include "stormo/tensor.hpp"  // AlignedBuffer
#include "util/file.hpp"

namespace stormo {

class DirectAppender {
public:
    // Opens `path` (an existing, empty file) for direct writes; null where the file system
    // refuses them.
    static std::unique_ptr<DirectAppender> open(const std::string& path);
    ~DirectAppender();
    DirectAppender(const DirectAppender&) = delete;
    DirectAppender& operator=(const DirectAppender&) = delete;

    Expected<void> append(const void* data, size_t size);
    // Writes what is left (padded to the alignment, then the file cut to its length) and waits
    // for every write. The bytes appended in all.
    Expected<uint64_t> finish();

private:
    DirectAppender() = default;
    void write_loop();
    Expected<void> hand_over();  // the full window to the writer thread; waits for the other one

    std::string path_;
    FileDescriptor fd_;
    AlignedBuffer windows_[2];
    size_t filling_ = 0;      // the window being filled
    size_t fill_ = 0;         // bytes in it
    uint64_t appended_ = 0;   // bytes appended in all
    uint64_t file_offset_ = 0;  // where the window being filled goes

    std::mutex mutex_;
    std::condition_variable changed_;
    bool pending_ = false;        // a window waits for the writer (guarded by mutex_)
    size_t pending_window_ = 0;
    size_t pending_bytes_ = 0;
    uint64_t pending_offset_ = 0;
    bool stop_ = false;
    std::optional<Error> error_;  // the writer's first error
    std::jthread writer_;
};

}  // namespace stormo
