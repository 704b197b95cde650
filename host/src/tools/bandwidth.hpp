#pragma once
// Physical bounds measured on this machine, in the same run as a benchmark: how fast the CPU
// reads RAM with the engine's threads, and how fast the disk delivers the model's expert bytes.
// A benchmark divides bytes per token by these to get the tokens/s no implementation can beat.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"  // AlignedBuffer

namespace stormo {

struct RamBandwidth {
    double bytes_per_s = 0.0;   // best of the repeats
    double median_bytes_per_s = 0.0;
    uint64_t buffer_bytes = 0;
    int repeats = 0;            // rounds: one pass per stream count each
    int passes = 0;             // every pass timed (the median is over these)
    size_t threads = 0;
    size_t streams = 0;         // sequential streams per thread in the best pass
    std::string loop = "reference";  // whose xor_reduce read (the kernels plugin's name)
    uint64_t checksum = 0;      // the reduction's result: keeps the reads observable
};

struct RamProbeOptions {
    uint64_t bytes = uint64_t{1} << 30;  // well above any last-level cache
    int repeats = 5;                     // passes per stream count; the best counts (a bound is not lowered by a hiccup)
    // Stream counts per thread to try (each thread's stripe read as that many sequential streams,
    // interleaved 4 KiB at a time). Which reads fastest depends on the memory system and on the
    // load, so the probe tries each and keeps the best pass: a bound is what the best simple loop
    // reaches, not what one chosen loop does.
    std::vector<size_t> streams{1, 2, 4};
    // The loop: the kernels plugin's xor_reduce (its widest loads), or the reference when null.
    XorReduceFn reduce = nullptr;
    std::string loop = "reference";      // who provides `reduce`, for the report
};

// The probe's buffer, kept to be read again: one stripe per pool thread, each a whole number of
// `unit` 1 MiB slices (so every stream count dividing `unit` cuts it evenly), touched first by
// the thread that reads it, every word distinct (pages of identical content can be merged by the
// hypervisor or KSM and then served from the caches).
class STORMO_API RamProbeBuffer {
public:
    static Expected<RamProbeBuffer> allocate(ThreadPool& pool, uint64_t bytes, size_t unit = 1);
    // One pass of every pool thread over its stripe as `streams` sequential streams, interleaved
    // a 4 KiB piece at a time, through `reduce`: bytes per second. `checksum` gets the XOR.
    double read(ThreadPool& pool, XorReduceFn reduce, size_t streams, uint64_t& checksum) const;
    uint64_t bytes() const { return buffer_.size(); }

private:
    RamProbeBuffer(AlignedBuffer buffer, uint64_t stripe_bytes) : buffer_(std::move(buffer)), stripe_bytes_(stripe_bytes) {}
    AlignedBuffer buffer_;
    uint64_t stripe_bytes_ = 0;
};

// Reads a buffer (touched first by the threads that read it, every word distinct) with every
// thread of the pool at once, `repeats` rounds of one pass per stream count, and reports the best
// pass. Each thread reads its own stripe as that many sequential streams, interleaved a 4 KiB
// piece at a time, through `reduce`: an XOR over wide loads into independent accumulators, bound
// by memory rather than by a dependency chain.
STORMO_API Expected<RamBandwidth> measure_ram_read_bandwidth(ThreadPool& pool, const RamProbeOptions& options);
// The same with the reference loop and default streams (kept for callers without a kernel table).
STORMO_API Expected<RamBandwidth> measure_ram_read_bandwidth(ThreadPool& pool, uint64_t bytes = uint64_t{1} << 30,
                                                             int repeats = 5);

// A byte range of a file (e.g. one expert tensor of a checkpoint shard).
struct FileRange {
    std::string file;
    uint64_t offset = 0;
    uint64_t nbytes = 0;
};

struct DiskReadOptions {
    uint64_t bytes = uint64_t{1} << 30;  // how much to read in total (capped by the ranges)
    uint64_t block = uint64_t{8} << 20;  // one read; a multiple of 4 KiB
    size_t in_flight = 4;                // reads outstanding at once (one thread each)
    bool direct_io = true;               // O_DIRECT when the file system allows it
    uint64_t seed = 0;                   // the order the blocks are read in
    int passes = 3;                      // bytes split over passes of distinct blocks; the best counts
};

struct DiskBandwidth {
    double bytes_per_s = 0.0;         // the best pass: a bound should not be lowered by a hiccup
    double median_bytes_per_s = 0.0;
    int passes = 0;
    uint64_t bytes_read = 0;          // over every pass
    double seconds = 0.0;
    size_t reads = 0;
    bool direct_io = false;  // O_DIRECT was used for every read
    std::string note;        // how the page cache was kept out when O_DIRECT was not used
};

// Reads block-sized, 4 KiB-aligned pieces of the ranges in a seeded random order with
// `in_flight` reads outstanding, as the expert store reads misses, in `passes` passes over
// distinct pieces (the best pass is the figure: a shared machine's stalls only lower a pass). With O_DIRECT the page cache
// is bypassed; when the file system refuses O_DIRECT the reads are buffered after
// posix_fadvise(DONTNEED) dropped the pieces from the page cache, and `note` says so.
STORMO_API Expected<DiskBandwidth> measure_disk_read_bandwidth(std::span<const FileRange> ranges,
                                                               const DiskReadOptions& options);

}  // namespace stormo
