// MappedFile: see mapped_file.hpp.
#include "util/mapped_file.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

#include <sys/mman.h>

#include "util/file.hpp"

namespace stormo {

MappedFile::~MappedFile() {
    if (size_ > 0) ::munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
    if (this != &o) {
        if (size_ > 0) ::munmap(const_cast<std::byte*>(data_), size_);
        path_ = std::move(o.path_);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
    }
    return *this;
}

Expected<MappedFile> MappedFile::open(const std::string& path) {
    // open_read refuses what is not a regular file before anything is mapped.
    STORMO_TRY_ASSIGN(auto fd, FileDescriptor::open_read(path));
    STORMO_TRY_ASSIGN(const uint64_t size, file_size(fd.get(), path));
    MappedFile file;
    file.path_ = path;
    if (size == 0) return file;
    if (size > SIZE_MAX) return fail(ErrorKind::resource, path + ": file of " + std::to_string(size) + " bytes cannot be mapped");
    void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (p == MAP_FAILED) return fail(ErrorKind::io, path + ": cannot map " + std::to_string(size) + " bytes: " + std::strerror(errno));
    // The mapping outlives the descriptor, which closes when `fd` goes out of scope.
    file.data_ = static_cast<const std::byte*>(p);
    file.size_ = static_cast<size_t>(size);
    return file;
}

}  // namespace stormo
