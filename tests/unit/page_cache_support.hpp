#pragma once
// What the page cache holds of a file, for tests of code that keeps its reads out of it.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stormo::test {

// Pages of the file's first `size` bytes resident in the page cache, by mincore over a fresh mapping.
inline size_t cached_pages(const std::string& path, uint64_t size) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return 0;
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return 0;
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in_core((size + page - 1) / page);
    ::mincore(map, size, in_core.data());
    ::munmap(map, size);
    return static_cast<size_t>(std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return c & 1; }));
}

// Reads the whole file once through the page cache (written back first, so its pages can be dropped).
inline void read_through_cache(const std::string& path, uint64_t size) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    ::fdatasync(fd);
    std::vector<char> all(size);
    [[maybe_unused]] const ssize_t got = ::pread(fd, all.data(), size, 0);
    ::close(fd);
}

}  // namespace stormo::test
