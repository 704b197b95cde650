#pragma once
// A regular file mapped read-only into memory for the life of the object. GGUF headers are parsed
// in place (a 200k-token vocabulary is hundreds of thousands of strings: views into the mapping
// instead of copies), and tensor bytes are read from the mapping.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

class STORMO_API MappedFile {
public:
    MappedFile() = default;
    ~MappedFile();
    MappedFile(MappedFile&& o) noexcept;
    MappedFile& operator=(MappedFile&& o) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    // Maps the whole file; it must be a regular file (a FIFO or device is refused by name). An
    // empty file maps to an empty span. A file truncated by someone else while mapped makes reads
    // of the lost pages fault (SIGBUS): model files are not expected to change under a reader.
    static Expected<MappedFile> open(const std::string& path);

    std::span<const std::byte> bytes() const { return {data_, size_}; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    const std::byte* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace stormo
