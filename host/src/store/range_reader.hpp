#pragma once
// Many byte ranges of model files copied into memory through a few large reads. Loading every
// expert into RAM part by part through the page cache left a copy of the file in the cache as the
// resident copy filled: the kernel reclaimed and compacted memory for the rest of the load, huge
// pages ran out and the experts were left on small pages (docs/log/benchmarks-history.md,
// "2026-12-02, morning"). With O_DIRECT windows of a few MiB the file's bytes never enter the cache.
#include <cstdint>
#include <string>
#include <vector>

#include "store/read_backend.hpp"
#include "stormo/tensor.hpp"  // AlignedBuffer

namespace stormo {

struct RangeCopy {
    std::string file;    // as the backend opened it
    uint64_t offset = 0;  // absolute byte offset in the file
    uint64_t size = 0;
    void* dst = nullptr;
    std::string what;    // names the range in errors (the tensor, the expert)
};

// Window size of read_ranges: large enough that a read costs little per byte, small enough to
// stay a bounce buffer.
inline constexpr size_t kRangeWindowBytes = size_t{16} << 20;

// Copies every range into its dst, reading each file in ascending order through windows of
// kRangeWindowBytes aligned to the backend's alignment; ranges in any order, overlapping or not. A
// file that ends before a range does is an error naming the range and the file. With direct
// reads, the ranges' pages already in the page cache are dropped first (ReadBackend::drop_cached).
// `window` is the bounce buffer (at least kRangeWindowBytes), kept by a caller that reads many
// batches so each batch does not fault in fresh pages again; the overload without one makes its own.
Expected<void> read_ranges(ReadBackend& backend, std::vector<RangeCopy> ranges, AlignedBuffer& window);
Expected<void> read_ranges(ReadBackend& backend, std::vector<RangeCopy> ranges);

}  // namespace stormo
