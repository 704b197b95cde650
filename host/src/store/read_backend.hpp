#pragma once
// How the expert store reads bytes: an interface, so tests can inject failed and short reads,
// and later tiers (io_uring, a network) plug in here without the store changing.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stormo/error.hpp"

namespace stormo {

class ReadBackend {
public:
    virtual ~ReadBackend() = default;
    // Reads up to `size` bytes at `offset` of `file` into `dst`; returns the bytes read, which is
    // less than size only at the end of the file. With direct I/O, offset, size and dst are
    // multiples of alignment().
    virtual Expected<size_t> read(const std::string& file, uint64_t offset, size_t size, void* dst) = 0;
    virtual bool direct_io() const = 0;
    virtual size_t alignment() const = 0;
    // Asks the kernel to drop its cached pages of a range that is about to be read directly (a
    // hint: nothing is lost, the file's bytes stay on disk). A backend without a page cache has
    // nothing to drop.
    virtual void drop_cached(const std::string& /*file*/, uint64_t /*offset*/, uint64_t /*size*/) {}
};

// pread on descriptors opened once per file, with O_DIRECT when asked and the file system allows
// it (else buffered reads, said by direct_io()). Safe to call from several threads at once.
Expected<std::unique_ptr<ReadBackend>> make_pread_backend(const std::vector<std::string>& files, bool want_direct_io);

}  // namespace stormo
