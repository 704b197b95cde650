#include "tools/session_io_bench.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>

#include "runtime/engine_identity.hpp"
#include "runtime/session_file.hpp"
#include "stormo/tensor.hpp"
#include "tools/bandwidth.hpp"
#include "tools/bench.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

constexpr uint64_t kWriteChunk = uint64_t{8} << 20;

// Writes `bytes` of distinct words (no file system may compress or dedupe them away) in 8 MiB
// writes and fsyncs: what a save's bytes cost on this disk at best. `direct`: past the page cache
// (O_DIRECT, whole 4 KiB blocks, then cut to length), as saves write where they can; 0 when the
// file system refuses direct writes.
Expected<double> write_probe(const std::string& path, uint64_t bytes, bool direct) {
    AlignedBuffer buffer(kWriteChunk, 4096);
    auto* chunk = reinterpret_cast<uint64_t*>(buffer.data());
    std::mt19937_64 rng(7);
    for (size_t i = 0; i < kWriteChunk / sizeof(uint64_t); ++i) chunk[i] = rng();
    std::error_code ignored;  // a new file each time, as a save writes one
    std::filesystem::remove(path, ignored);
    STORMO_TRY_ASSIGN(auto fd, FileDescriptor::create(path));
    if (direct) {
        const int d = ::open(path.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (d < 0) return 0.0;
        fd = FileDescriptor(d);
    }
    const uint64_t whole = direct ? (bytes + 4095) / 4096 * 4096 : bytes;
    const auto start = Clock::now();
    for (uint64_t done = 0; done < whole;) {
        const uint64_t n = std::min<uint64_t>(kWriteChunk, whole - done);
        chunk[0] = done;
        STORMO_TRY(write_all(fd.get(), chunk, n, path));
        done += n;
    }
    if (direct && ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return fail(ErrorKind::io, path + ": ftruncate failed");
    if (::fsync(fd.get()) != 0) return fail(ErrorKind::io, path + ": fsync failed");
    STORMO_TRY(fd.close(path));
    return static_cast<double>(bytes) / seconds_since(start);
}

// Whether the kernel dropped the file from the page cache: one of its pages is not resident.
bool dropped_from_page_cache(const std::string& path) {
    drop_page_cache(path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    unsigned char resident = 1;
    const long page = ::sysconf(_SC_PAGESIZE);
    void* map = ::mmap(nullptr, static_cast<size_t>(page), PROT_READ, MAP_SHARED, fd, 0);
    bool dropped = false;
    if (map != MAP_FAILED) {
        dropped = ::mincore(map, static_cast<size_t>(page), &resident) == 0 && (resident & 1) == 0;
        ::munmap(map, static_cast<size_t>(page));
    }
    ::close(fd);
    return dropped;
}

}  // namespace

Expected<SessionIoRun> run_session_io_bench(Engine& engine, const SessionIoRequest& request) {
    if (request.prompt_tokens == 0) return fail(ErrorKind::invalid_argument, "--prompt-tokens must be at least 1");
    if (!std::filesystem::is_directory(request.dir))
        return fail(ErrorKind::invalid_argument, "--dir " + request.dir + ": not a directory");
    STORMO_TRY_ASSIGN(const EngineIdentity identity, engine_identity(engine));
    SessionIoRun run;
    std::mt19937_64 rng(request.seed);
    const std::vector<int32_t> prompt = draw_prompt(rng, engine.model().vocab_size(), request.prompt_tokens);
    const size_t capacity = request.prompt_tokens + 1;
    Pipeline& pipeline = engine.pipeline();

    STORMO_TRY_ASSIGN(auto session, engine.new_session(capacity));
    ForwardOptions prefill;
    if (request.on_progress)
        prefill.on_block = [&](size_t done, size_t total) { request.on_progress("prefill", done, total); };
    int32_t next = 0;
    prefill.argmax_out = &next;
    auto start = Clock::now();
    STORMO_TRY(pipeline.forward(*session, prompt, prefill));
    run.prefill_seconds = seconds_since(start);
    run.positions = session->position();
    run.kv_bytes = session->kv_bytes_in_use();

    const std::string path = (std::filesystem::path(request.dir) / "stormo-bench.session").string();
    const std::string probe_path = (std::filesystem::path(request.dir) / "stormo-bench.probe").string();
    struct Cleanup {
        std::string a, b;
        ~Cleanup() {
            std::error_code ec;
            std::filesystem::remove(a, ec);
            std::filesystem::remove(b, ec);
        }
    } cleanup{path, probe_path};
    // Each round saves, writes the probe's bytes (the write bound), loads from the disk and reads
    // the session file with the probe (the read bound), then loads from the page cache: both
    // sides of each ratio meet the same state of the disk and of the machine's memory (a write
    // right after a model's load ran at a third of this disk's usual speed, seen with a plain
    // write loop too), and the medians set them side by side.
    std::vector<double> saves, replaces, writes, loads, cached_loads, reads;
    std::unique_ptr<Session> loaded_session;
    run.page_cache_dropped = true;
    run.read_bound_direct = true;
    const size_t rounds = std::max<size_t>(request.rounds, 1);
    for (size_t r = 0; r < rounds; ++r) {
        if (request.on_progress) request.on_progress("save, load and disk probes", r, rounds);
        // A save to a new file, as the probe writes one; then one over it, as a chat's next turn
        // saves: the file system frees the old file's blocks in the rename, which the disk's
        // bandwidth does not measure.
        std::error_code ignored;
        std::filesystem::remove(path, ignored);
        STORMO_TRY_ASSIGN(const SessionFileStats saved, save_session_file(path, *session, identity, "{}"));
        run.file_bytes = saved.bytes;
        saves.push_back(saved.seconds);
        STORMO_TRY_ASSIGN(const SessionFileStats replaced, save_session_file(path, *session, identity, "{}"));
        replaces.push_back(replaced.seconds);
        // The bound is the better of the two ways a file can be written.
        STORMO_TRY_ASSIGN(const double buffered_rate, write_probe(probe_path, run.file_bytes, false));
        STORMO_TRY_ASSIGN(const double direct_rate, write_probe(probe_path, run.file_bytes, true));
        writes.push_back(std::max(buffered_rate, direct_rate));

        // The read bound is the disk probe reading this same file (8 MiB pieces, four in flight,
        // past the page cache, one pass over it all): the same blocks, so whatever lies below the
        // file system (a virtual disk's cache on its host; the blocks a direct or a buffered write
        // left) meets both sides alike, and which goes first alternates by round.
        auto load_from_disk = [&]() -> Expected<void> {
            run.page_cache_dropped = dropped_from_page_cache(path) && run.page_cache_dropped;
            STORMO_TRY_ASSIGN(auto blank, engine.new_session(capacity));
            STORMO_TRY_ASSIGN(auto loaded, load_session_file(path, identity, std::move(blank)));
            loads.push_back(loaded.stats.seconds);
            if (!loaded_session) loaded_session = std::move(loaded.session);
            return {};
        };
        auto read_probe = [&]() -> Expected<void> {
            drop_page_cache(path);
            DiskReadOptions o;
            o.bytes = run.file_bytes;
            o.block = std::min<uint64_t>(kWriteChunk, run.file_bytes / 4096 * 4096);
            o.passes = 1;
            const FileRange whole{path, 0, run.file_bytes / 4096 * 4096};
            if (o.block == 0) return {};
            STORMO_TRY_ASSIGN(const DiskBandwidth read, measure_disk_read_bandwidth(std::span<const FileRange>(&whole, 1), o));
            reads.push_back(read.bytes_per_s);
            run.read_bound_direct = run.read_bound_direct && read.direct_io;
            return {};
        };
        if (r % 2 == 0) {
            STORMO_TRY(load_from_disk());
            STORMO_TRY(read_probe());
        } else {
            STORMO_TRY(read_probe());
            STORMO_TRY(load_from_disk());
        }
        STORMO_TRY_ASSIGN(auto blank_again, engine.new_session(capacity));
        STORMO_TRY_ASSIGN(auto cached, load_session_file(path, identity, std::move(blank_again)));
        cached_loads.push_back(cached.stats.seconds);
    }
    run.rounds = rounds;
    run.save_seconds = median(saves);
    run.replace_seconds = median(replaces);
    // A bound is the best the disk gave, as the read probe keeps its best pass: a round in which
    // the disk stalled must not make a save look faster than the disk allows.
    run.write_bound_bytes_per_s = *std::max_element(writes.begin(), writes.end());
    run.load_seconds = median(loads);
    run.load_cached_seconds = median(cached_loads);
    run.read_bound_bytes_per_s = reads.empty() ? 0.0 : *std::max_element(reads.begin(), reads.end());
    for (size_t r = 0; r < rounds; ++r) {
        run.save_rates.push_back(static_cast<double>(run.file_bytes) / saves[r]);
        run.write_rates.push_back(writes[r]);
        run.load_rates.push_back(static_cast<double>(run.file_bytes) / loads[r]);
        if (r < reads.size()) run.read_rates.push_back(reads[r]);
    }
    run.read_bound_direct = run.read_bound_direct && !reads.empty();
    // Each round's pair (the save and the write probe, the load and the read probe, minutes apart
    // at most), as farm-bench sets A and B side by side: the disk's own drift between rounds
    // cancels out of these.
    std::vector<double> save_pairs, load_pairs;
    for (size_t r = 0; r < rounds; ++r) {
        save_pairs.push_back(run.save_rates[r] / run.write_rates[r]);
        if (r < run.read_rates.size()) load_pairs.push_back(run.load_rates[r] / run.read_rates[r]);
    }
    run.save_pair_ratio = median(save_pairs);
    run.load_pair_ratio = load_pairs.empty() ? 0.0 : median(load_pairs);

    const std::vector<int32_t> one{next};
    STORMO_TRY_ASSIGN(const std::vector<float> expected, pipeline.forward(*session, one, {}));
    STORMO_TRY_ASSIGN(const std::vector<float> got, pipeline.forward(*loaded_session, one, {}));
    run.continues_exactly = expected.size() == got.size() && std::memcmp(expected.data(), got.data(), got.size() * sizeof(float)) == 0;
    return run;
}

}  // namespace stormo
