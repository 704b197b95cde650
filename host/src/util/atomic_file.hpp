#pragma once
// A file that appears whole or not at all: written to a temporary file beside its final name,
// flushed to the disk (fsync), renamed over the name, and the directory flushed, so a crash, a kill
// or a full disk at any moment leaves either the old file or the new one, never a part. A writer
// destroyed before commit() removes its temporary file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "util/file.hpp"

namespace stormo {

// Whether a file name is one of AtomicFileWriter's temporary files (".NAME.stormo-tmp-..."): what a
// crash leaves, to be removed by whoever owns the directory.
STORMO_API bool is_atomic_temp_name(std::string_view file_name);

// Removes the temporary files that writers of `path` left when they were killed: those whose
// writing process (the pid in the name) no longer runs here. A live writer's file is kept.
// Returns how many were removed.
STORMO_API Expected<size_t> remove_stale_temp_files(const std::string& path);

// Flushes the directory that holds `path` to the disk, so a rename into it lasts; `what` names
// the file in errors. A file system that cannot sync a directory is no error.
STORMO_API Expected<void> fsync_directory(const std::string& path, const std::string& what);

class STORMO_API AtomicFileWriter {
public:
    // Creates the temporary file in `path`'s directory (which must exist). `what` names the file
    // in errors ("the session file x.session").
    static Expected<AtomicFileWriter> create(const std::string& path, std::string what);
    ~AtomicFileWriter();
    AtomicFileWriter(AtomicFileWriter&&) noexcept;
    AtomicFileWriter& operator=(AtomicFileWriter&&) noexcept;
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

    // Appends bytes. A full disk is an error that says so ("no space left on the device").
    Expected<void> write(const void* data, size_t size);
    uint64_t written() const { return written_; }
    // The temporary file, for a writer that fills it another way (util/direct_appender.hpp)
    // before commit().
    const std::string& temp_path() const { return temp_path_; }
    // fsync, rename over `path`, fsync the directory. After an error the temporary file is gone
    // and `path` holds what it held before.
    Expected<void> commit();

private:
    AtomicFileWriter() = default;
    void discard();
    std::string path_;
    std::string temp_path_;
    std::string what_;
    FileDescriptor fd_;
    uint64_t written_ = 0;
};

}  // namespace stormo
