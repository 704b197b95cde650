// RAM and disk read bandwidth probes. Both are written to reach the hardware's limit with the
// resources the engine itself has (its thread count; several reads in flight), so a benchmark's
// achieved/bound ratio says how much the engine leaves on the table.
#include "tools/bandwidth.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <numeric>
#include <random>
#include <thread>

#include "stormo/tensor.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kSlice = uint64_t{1} << 20;    // one unit of RAM-probe work
constexpr uint64_t kDirectAlign = 4096;           // O_DIRECT offset, length and buffer alignment

uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Distinct 8-byte words (a bijective mix of their index), so no two pages are alike.
void fill_unique(std::byte* p, size_t n, uint64_t first_word) {
    for (size_t i = 0; i < n / 8; ++i) {
        uint64_t z = (first_word + i + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z ^= z >> 27;
        std::memcpy(p + 8 * i, &z, sizeof z);
    }
}

// ---- disk ---------------------------------------------------------------------------------

struct Piece {
    size_t file = 0;  // index into the file list
    uint64_t offset = 0;
    uint64_t length = 0;
};

struct OpenFiles {
    std::vector<std::string> paths;
    std::vector<FileDescriptor> fds;
};

// The ranges as 4 KiB-aligned pieces of at most `block` bytes, adjacent ranges of a file merged
// first so a tensor boundary does not cut a read short. Pieces stay inside the file's aligned
// part (an O_DIRECT read must be whole 4 KiB units).
Expected<std::vector<Piece>> split_ranges(std::span<const FileRange> ranges, uint64_t block, OpenFiles& files) {
    std::map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> by_file;
    for (const FileRange& r : ranges)
        if (r.nbytes > 0) by_file[r.file].emplace_back(r.offset, r.offset + r.nbytes);
    std::vector<Piece> pieces;
    for (auto& [path, spans] : by_file) {
        STORMO_TRY_ASSIGN(auto fd, FileDescriptor::open_read(path));
        auto size = fd.size(path);
        if (!size) return tl::unexpected(size.error());
        const uint64_t limit = align_down(*size, kDirectAlign);
        std::sort(spans.begin(), spans.end());
        std::vector<std::pair<uint64_t, uint64_t>> merged;
        for (auto [b, e] : spans) {
            b = align_down(b, kDirectAlign);
            e = std::min(align_up(e, kDirectAlign), limit);
            if (b >= e) continue;
            if (!merged.empty() && b <= merged.back().second) merged.back().second = std::max(merged.back().second, e);
            else merged.emplace_back(b, e);
        }
        const size_t index = files.paths.size();
        files.paths.push_back(path);
        files.fds.push_back(std::move(fd));
        for (auto [b, e] : merged)
            for (uint64_t at = b; at < e; at += block) pieces.push_back({index, at, std::min(block, e - at)});
    }
    return pieces;
}

// Reopens every file for the reads, with O_DIRECT when asked; false in `direct` when a file
// system refused it (then every descriptor is buffered, so the figure means one thing).
Expected<void> reopen(OpenFiles& files, bool& direct) {
    for (size_t i = 0; i < files.paths.size(); ++i) {
        const std::string& path = files.paths[i];
        int fd = -1;
        if (direct) {
            fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
            if (fd < 0 && errno == EINVAL) {
                direct = false;
                return reopen(files, direct);
            }
        } else {
            fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        }
        if (fd < 0) return fail(ErrorKind::io, path + ": cannot open for the disk read probe: " + std::strerror(errno));
        files.fds[i] = FileDescriptor(fd);
    }
    return {};
}

// Drops the pieces from the page cache so buffered reads come from the disk. Dirty pages (a
// checkpoint just written) are written back first: DONTNEED keeps dirty pages.
void evict_from_page_cache(const OpenFiles& files, std::span<const Piece> pieces) {
    for (const Piece& p : pieces) {
        const int fd = files.fds[p.file].get();
        ::sync_file_range(fd, static_cast<off_t>(p.offset), static_cast<off_t>(p.length),
                          SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
        ::posix_fadvise(fd, static_cast<off_t>(p.offset), static_cast<off_t>(p.length), POSIX_FADV_DONTNEED);
    }
}

struct ReadOutcome {
    uint64_t bytes = 0;
    double seconds = 0.0;
    bool refused_direct = false;  // a direct read failed with EINVAL: retry buffered
};

Expected<ReadOutcome> read_pieces(const OpenFiles& files, std::span<const Piece> pieces, uint64_t block,
                                  size_t in_flight) {
    std::atomic<size_t> next{0};
    std::atomic<uint64_t> total{0};
    std::atomic<bool> stop{false};
    std::mutex error_mutex;
    std::optional<Error> error;
    bool refused_direct = false;

    std::vector<AlignedBuffer> buffers;
    try {
        for (size_t t = 0; t < in_flight; ++t) buffers.emplace_back(static_cast<size_t>(block), kDirectAlign);
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::resource, "disk read probe: cannot allocate " + std::to_string(in_flight) +
                                             " read buffers of " + std::to_string(block) + " bytes");
    }
    auto worker = [&](size_t t) {
        std::byte* buffer = buffers[t].data();
        for (;;) {
            const size_t k = next.fetch_add(1, std::memory_order_relaxed);
            if (k >= pieces.size() || stop.load(std::memory_order_relaxed)) return;
            const Piece& p = pieces[k];
            uint64_t done = 0;
            while (done < p.length) {
                const ssize_t n = ::pread(files.fds[p.file].get(), buffer + done, p.length - done,
                                          static_cast<off_t>(p.offset + done));
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) {
                    const int err = errno;
                    std::lock_guard<std::mutex> lock(error_mutex);
                    if (err == EINVAL) refused_direct = true;
                    if (!error)
                        error = Error{ErrorKind::io, files.paths[p.file] + ": read of " + std::to_string(p.length) +
                                                         " bytes at offset " + std::to_string(p.offset) +
                                                         " failed: " + std::strerror(err)};
                    stop = true;
                    return;
                }
                if (n == 0) break;  // end of file
                done += static_cast<uint64_t>(n);
            }
            total.fetch_add(done, std::memory_order_relaxed);
        }
    };
    const auto t0 = Clock::now();
    std::vector<std::thread> threads;
    try {
        for (size_t t = 1; t < in_flight; ++t) threads.emplace_back(worker, t);
    } catch (const std::system_error& e) {
        stop = true;
        for (auto& th : threads) th.join();
        return fail(ErrorKind::resource, std::string("disk read probe: cannot start a reader thread: ") + e.what());
    }
    worker(0);
    for (auto& th : threads) th.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (error) {
        if (refused_direct) return ReadOutcome{0, 0.0, true};
        return tl::unexpected(*error);
    }
    return ReadOutcome{total.load(), seconds, false};
}

}  // namespace

Expected<RamBandwidth> measure_ram_read_bandwidth(ThreadPool& pool, uint64_t bytes, int repeats) {
    RamProbeOptions options;
    options.bytes = bytes;
    options.repeats = repeats;
    return measure_ram_read_bandwidth(pool, options);
}

Expected<RamProbeBuffer> RamProbeBuffer::allocate(ThreadPool& pool, uint64_t bytes, size_t unit) {
    if (bytes < kSlice)
        return fail(ErrorKind::invalid_argument, "RAM read probe: the buffer must be at least 1 MiB, got " +
                                                     std::to_string(bytes) + " bytes");
    const size_t threads = pool.size();
    // One stripe per thread, a whole number of `unit` slices (at least one unit).
    const size_t slices_per_thread = std::max<size_t>(1, static_cast<size_t>(bytes / kSlice) / (threads * unit)) * unit;
    const size_t n_slices = slices_per_thread * threads;
    AlignedBuffer buffer;
    try {
        buffer = AlignedBuffer(n_slices * kSlice, 4096);
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::resource, "RAM read probe: cannot allocate " + std::to_string(n_slices * kSlice) + " bytes");
    }
    std::byte* base = buffer.data();
    const uint64_t stripe_bytes = slices_per_thread * kSlice;
    // First touch by the thread that reads the stripe (its pages land on that thread's node).
    // Every word differs: pages of identical content can be merged by the hypervisor or KSM into
    // one physical page, which the caches then serve at several times the real bandwidth (seen
    // here with memset-filled buffers).
    pool.parallel_for(threads, 1, [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t)
            fill_unique(base + t * stripe_bytes, stripe_bytes, t * (stripe_bytes / 8));
    });
    return RamProbeBuffer(std::move(buffer), stripe_bytes);
}

double RamProbeBuffer::read(ThreadPool& pool, XorReduceFn reduce, size_t streams, uint64_t& checksum) const {
    constexpr uint64_t kPiece = 4096;
    const size_t threads = pool.size();
    const std::byte* base = buffer_.data();
    const uint64_t stream_bytes = stripe_bytes_ / streams;
    std::vector<uint64_t> partial(threads, 0);
    const auto t0 = Clock::now();
    // Every thread takes one stripe and reads its streams a piece each in turn.
    pool.parallel_for(threads, 1, [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
            const std::byte* stripe = base + t * stripe_bytes_;
            uint64_t acc = 0;
            for (uint64_t at = 0; at < stream_bytes; at += kPiece)
                for (size_t s = 0; s < streams; ++s) acc ^= reduce(stripe + s * stream_bytes + at, kPiece);
            partial[t] = acc;
        }
    });
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    uint64_t pass = 0;
    for (uint64_t v : partial) pass ^= v;
    checksum = pass;
    return static_cast<double>(buffer_.size()) / std::max(seconds, 1e-9);
}

Expected<RamBandwidth> measure_ram_read_bandwidth(ThreadPool& pool, const RamProbeOptions& options) {
    const int repeats = options.repeats;
    if (repeats < 1) return fail(ErrorKind::invalid_argument, "RAM read probe: repeats must be >= 1");
    if (options.streams.empty()) return fail(ErrorKind::invalid_argument, "RAM read probe: no stream count to try");
    size_t unit = 1;  // every stream count must cut a stripe into whole slices
    for (const size_t s : options.streams) {
        if (s < 1 || s > 64) return fail(ErrorKind::invalid_argument, "RAM read probe: stream counts must be in 1..64");
        unit = std::lcm(unit, s);
    }
    STORMO_TRY_ASSIGN(auto buffer, RamProbeBuffer::allocate(pool, options.bytes, unit));
    const XorReduceFn reduce = options.reduce != nullptr ? options.reduce : reference_kernels().xor_reduce;
    std::vector<double> rates;
    RamBandwidth out;
    for (int r = 0; r < repeats; ++r)
        for (const size_t streams : options.streams) {
            uint64_t pass = 0;
            const double rate = buffer.read(pool, reduce, streams, pass);
            out.checksum += pass;  // summed over passes: XOR would cancel an even number of them
            if (rates.empty() || rate > out.bytes_per_s) {
                out.bytes_per_s = rate;
                out.streams = streams;
            }
            rates.push_back(rate);
        }
    std::sort(rates.begin(), rates.end());
    out.median_bytes_per_s = rates[rates.size() / 2];
    out.buffer_bytes = buffer.bytes();
    out.repeats = repeats;
    out.passes = static_cast<int>(rates.size());
    out.threads = pool.size();
    out.loop = options.reduce != nullptr ? options.loop : std::string("reference");
    return out;
}

Expected<DiskBandwidth> measure_disk_read_bandwidth(std::span<const FileRange> ranges, const DiskReadOptions& options) {
    if (options.block < kDirectAlign || options.block % kDirectAlign != 0)
        return fail(ErrorKind::invalid_argument, "disk read probe: the block size must be a multiple of 4096 bytes, got " +
                                                     std::to_string(options.block));
    if (options.in_flight < 1) return fail(ErrorKind::invalid_argument, "disk read probe: in_flight must be >= 1");
    if (options.bytes == 0) return fail(ErrorKind::invalid_argument, "disk read probe: nothing to read (0 bytes asked)");
    if (options.passes < 1) return fail(ErrorKind::invalid_argument, "disk read probe: passes must be >= 1");
    OpenFiles files;
    STORMO_TRY_ASSIGN(auto all, split_ranges(ranges, options.block, files));
    if (all.empty()) return fail(ErrorKind::invalid_argument, "disk read probe: the ranges hold no whole 4 KiB block");

    std::mt19937_64 rng(options.seed);
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<Piece> chosen;
    uint64_t planned = 0;
    for (const Piece& p : all) {
        if (planned >= options.bytes) break;
        chosen.push_back(p);
        planned += p.length;
    }

    bool direct = options.direct_io;
    STORMO_TRY(reopen(files, direct));
    if (!direct) evict_from_page_cache(files, chosen);
    const size_t passes = std::min(chosen.size(), static_cast<size_t>(options.passes));
    std::vector<double> rates;
    DiskBandwidth out;
    // Every pass over its share of the pieces; false when a direct read was refused.
    auto run_passes = [&]() -> Expected<bool> {
        rates.clear();
        out = DiskBandwidth{};
        for (size_t p = 0; p < passes; ++p) {
            const size_t begin = chosen.size() * p / passes, end = chosen.size() * (p + 1) / passes;
            auto outcome = read_pieces(files, std::span<const Piece>(chosen.data() + begin, end - begin),
                                       options.block, options.in_flight);
            if (!outcome) return tl::unexpected(outcome.error());
            if (outcome->refused_direct) return false;
            out.bytes_read += outcome->bytes;
            out.seconds += outcome->seconds;
            rates.push_back(outcome->seconds > 0 ? static_cast<double>(outcome->bytes) / outcome->seconds : 0.0);
        }
        return true;
    };
    auto completed = run_passes();
    if (!completed) return tl::unexpected(completed.error());
    if (!*completed && direct) {
        // The file system opened with O_DIRECT but refused the reads: measure buffered.
        direct = false;
        STORMO_TRY(reopen(files, direct));
        evict_from_page_cache(files, chosen);
        completed = run_passes();
        if (!completed) return tl::unexpected(completed.error());
    }
    if (!*completed) return fail(ErrorKind::io, "disk read probe: buffered reads failed with EINVAL");
    std::sort(rates.begin(), rates.end());
    out.bytes_per_s = rates.back();
    out.median_bytes_per_s = rates[rates.size() / 2];
    out.passes = static_cast<int>(rates.size());
    out.reads = chosen.size();
    out.direct_io = direct;
    if (!direct)
        out.note = options.direct_io
                       ? "O_DIRECT refused by the file system: buffered reads after posix_fadvise(DONTNEED)"
                       : "buffered reads after posix_fadvise(DONTNEED) (direct I/O off)";
    return out;
}

}  // namespace stormo
