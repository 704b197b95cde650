#include "runtime/session_file.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/session_bytes.hpp"
#include "stormo/tensor.hpp"
#include "store/read_backend.hpp"
#include "util/atomic_file.hpp"
#include "util/content_hash.hpp"
#include "util/direct_appender.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

constexpr char kMagic[16] = {'S', 'T', 'O', 'R', 'M', 'O', '-', 'S', 'E', 'S', 'S', 'I', 'O', 'N', '\n', '\0'};
constexpr uint64_t kPreambleBytes = sizeof kMagic + 4 + 4 + 8;
// A header is a few strings and numbers, the caller's record included (a conversation's
// messages): anything larger is not a session file's.
constexpr uint64_t kMaxHeaderBytes = uint64_t{256} << 20;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Header {
    EngineIdentity identity;
    std::string layout;
    uint64_t position = 0;
    uint64_t written_end = 0;
    uint64_t needs_replay = 0;
    uint64_t page_floats = 0;
    std::vector<uint64_t> ring_floats;
    std::string record;
    std::vector<std::vector<int32_t>> experts;  // format 2 on
};

std::string encode(const Header& h) {
    ByteWriter w;
    w.text(h.identity.model);
    w.text(h.identity.config);
    w.text(h.identity.engine);
    w.text(h.identity.kernels);
    w.text(h.layout);
    w.u64(h.position);
    w.u64(h.written_end);
    w.u64(h.needs_replay);
    w.u64(h.page_floats);
    w.u64(h.ring_floats.size());
    for (uint64_t n : h.ring_floats) w.u64(n);
    w.text(h.record);
    write_expert_lists(w, h.experts);
    return w.bytes();
}

bool decode(std::string_view bytes, uint32_t format, Header& h) {
    ByteReader r(bytes);
    uint64_t rings = 0;
    if (!r.text(h.identity.model) || !r.text(h.identity.config) || !r.text(h.identity.engine) || !r.text(h.identity.kernels) ||
        !r.text(h.layout) || !r.u64(h.position) || !r.u64(h.written_end) || !r.u64(h.needs_replay) || !r.u64(h.page_floats) ||
        !r.u64(rings) || rings > (uint64_t{1} << 20))
        return false;
    h.ring_floats.resize(rings);
    for (uint64_t& n : h.ring_floats)
        if (!r.u64(n)) return false;
    if (!r.text(h.record)) return false;
    if (format >= 2 && !read_expert_lists(r, h.experts)) return false;
    return r.done();
}

// Reads sections in order, each checked against the checksum that follows it.
class SectionReader {
public:
    SectionReader(int fd, uint64_t file_bytes, const std::string& path) : fd_(fd), size_(file_bytes), path_(path) {}
    uint64_t offset() const { return offset_; }
    Expected<void> read(void* dst, uint64_t size, const std::string& section, bool checked = true) {
        const uint64_t needed = size + (checked ? 8 : 0);
        if (size_ - offset_ < needed)
            return fail(ErrorKind::format, path_ + ": the session file is truncated (it ends inside " + section + ")");
        STORMO_TRY(pread_exact(fd_, dst, size, offset_, path_));
        offset_ += size;
        if (!checked) return {};
        char sum[8];
        STORMO_TRY(pread_exact(fd_, sum, sizeof sum, offset_, path_));
        offset_ += sizeof sum;
        if (get_u64(sum) != checksum64(dst, size))
            return fail(ErrorKind::format, path_ + ": the session file is corrupted (" + section + " fails its checksum)");
        return {};
    }

private:
    int fd_;
    uint64_t size_;
    const std::string& path_;
    uint64_t offset_ = 0;
};

// Reads go through windows of this size (a multiple of any direct-I/O alignment).
constexpr uint64_t kReadWindow = uint64_t{2} << 20;

// Copies what window [w0, w0 + bytes) of the file holds of [at, at + size) into dst.
void copy_overlap(const std::byte* window, uint64_t w0, uint64_t bytes, uint64_t at, uint64_t size, char* dst) {
    const uint64_t lo = std::max(w0, at), hi = std::min(w0 + bytes, at + size);
    if (lo < hi) std::memcpy(dst + (lo - at), window + (lo - w0), hi - lo);
}

// A run of checksummed sections: section k is at[k] in the file, sizes[k] bytes followed by its
// 8-byte checksum, read into dst_of(k) (called once, on the thread that reads it) and checked as
// soon as it is whole, so a thread maps and checks one section while the disk reads the next.
struct SectionRun {
    std::span<const uint64_t> at, sizes;
    const std::function<char*(size_t)>& dst_of;
    const std::function<std::string(size_t)>& name_of;
    const std::string& path;
};

Expected<void> check_section(const SectionRun& run, size_t k, const char* dst, const char* sum) {
    if (get_u64(sum) == checksum64(dst, run.sizes[k])) return {};
    return fail(ErrorKind::format, run.path + ": the session file is corrupted (" + run.name_of(k) + " fails its checksum)");
}

// Sections [k0, k1) through windows aligned as the backend needs; the file's length was checked
// before.
Expected<void> read_run(ReadBackend& backend, const SectionRun& run, size_t k0, size_t k1) {
    const uint64_t align = backend.alignment();
    const uint64_t begin = run.at[k0], end = run.at[k1 - 1] + run.sizes[k1 - 1] + 8;
    AlignedBuffer window(kReadWindow, std::max<size_t>(align, 64));
    size_t first = k0;
    char* dst = nullptr;  // section `first`'s memory, once asked for
    char sum[8];
    for (uint64_t w0 = begin / align * align; w0 < end; w0 += kReadWindow) {
        const uint64_t want = std::min(kReadWindow, (end - w0 + align - 1) / align * align);
        STORMO_TRY_ASSIGN(const uint64_t bytes, backend.read(run.path, w0, want, window.data()));
        if (w0 + bytes < std::min(end, w0 + want)) return fail(ErrorKind::format, run.path + ": the session file is truncated");
        while (first < k1 && run.at[first] < w0 + bytes) {
            const uint64_t at = run.at[first], size = run.sizes[first];
            if (dst == nullptr) dst = run.dst_of(first);
            copy_overlap(window.data(), w0, bytes, at, size, dst);
            copy_overlap(window.data(), w0, bytes, at + size, 8, sum);
            if (at + size + 8 > w0 + bytes) break;  // the rest comes with the next window
            STORMO_TRY(check_section(run, first, dst, sum));
            ++first;
            dst = nullptr;
        }
    }
    return {};
}

// Reads consecutive checksummed sections from `offset` on (sizes[k] bytes each, then its
// checksum) into dst_of(k), called on the thread that reads section k, and checks them. Four
// threads share the sections by bytes, past the page cache where the file system allows: four
// reads in flight, as the disk probe finds a disk's bound, and the threads share what filling
// fresh memory costs (faults, copies, checksums: about as much as the disk here); a session read
// once is not worth a copy in the page cache.
Expected<void> read_sections(const std::string& path, uint64_t offset, std::span<const uint64_t> sizes,
                             const std::function<char*(size_t)>& dst_of, const std::function<std::string(size_t)>& name_of) {
    const size_t n = sizes.size();
    if (n == 0) return {};
    std::vector<uint64_t> at(n);
    uint64_t total = 0;
    for (size_t k = 0; k < n; ++k) {
        at[k] = offset + total;
        total += sizes[k] + 8;
    }
    const SectionRun run{at, sizes, dst_of, name_of, path};
    STORMO_TRY_ASSIGN(auto backend, make_pread_backend({path}, true));
    constexpr size_t kThreads = 4;
    std::vector<size_t> split{0};  // thread t reads [split[t], split[t + 1])
    for (size_t k = 0, t = 1; k < n && t < kThreads; ++k)
        if ((at[k] - offset) * kThreads >= total * t) {
            if (k > split.back()) split.push_back(k);
            ++t;
        }
    split.push_back(n);
    std::vector<std::optional<Error>> errors(split.size() - 1);
    auto read_part = [&](size_t t) {
        if (auto read = read_run(*backend, run, split[t], split[t + 1]); !read) errors[t] = read.error();
    };
    {
        std::vector<std::jthread> workers;
        for (size_t t = 1; t + 1 < split.size(); ++t) workers.emplace_back(read_part, t);
        read_part(0);
    }
    for (const auto& e : errors)
        if (e) return tl::unexpected(*e);
    return {};
}

std::vector<uint64_t> ring_floats_of(const Session& s) {
    std::vector<uint64_t> out;
    for (size_t i = 0; i < s.ring_infos().size(); ++i) out.push_back(s.ring_buffer(i).size());
    return out;
}

}  // namespace

Expected<SessionFileStats> save_session_file(const std::string& path, const Session& session, const EngineIdentity& identity,
                                             std::string_view record) {
    const auto start = Clock::now();
    Header h;
    h.identity = identity;
    h.layout = session.layout();
    h.position = session.position();
    h.written_end = session.written_end();
    h.needs_replay = session.needs_replay() ? 1 : 0;
    h.page_floats = session.page_floats();
    h.ring_floats = ring_floats_of(session);
    h.record = std::string(record);
    h.experts = session.routed_experts();
    const std::string header = encode(h);

    STORMO_TRY_ASSIGN(auto out, AtomicFileWriter::create(path, "the session file " + path));
    // Past the page cache where the file system allows: a session is written once and read
    // rarely, and copying it into the page cache cost more than the disk's own work.
    const std::unique_ptr<DirectAppender> direct = DirectAppender::open(out.temp_path());
    auto put = [&](const void* data, size_t size) { return direct ? direct->append(data, size) : out.write(data, size); };
    auto put_checked = [&](const void* data, size_t size) {
        char sum[8];
        put_u64(sum, checksum64(data, size));
        return put(data, size).and_then([&] { return put(sum, sizeof sum); });
    };
    char preamble[kPreambleBytes];
    std::memcpy(preamble, kMagic, sizeof kMagic);
    put_u32(preamble + sizeof kMagic, kSessionFileFormat);
    put_u32(preamble + sizeof kMagic + 4, 0);
    put_u64(preamble + sizeof kMagic + 8, header.size());
    STORMO_TRY(put(preamble, sizeof preamble));
    STORMO_TRY(put_checked(header.data(), header.size()));
    const std::span<const int32_t> tokens = session.tokens();
    STORMO_TRY(put_checked(tokens.data(), tokens.size_bytes()));
    // Every page of the positions held; a page no position of was written (a model without
    // full-attention buffers has none) is written as zeros so the file's shape is fixed.
    const size_t page_bytes = session.page_floats() * sizeof(float);
    const size_t pages = page_bytes > 0 ? Session::pages_for(session.position()) : 0;
    std::vector<float> zeros;
    std::vector<const float*> page_data(pages);
    for (size_t p = 0; p < pages; ++p) {
        page_data[p] = session.page(p);
        if (page_data[p] == nullptr) {
            zeros.resize(session.page_floats());
            page_data[p] = zeros.data();
        }
    }
    // The pages' checksums on a second thread, ahead of the copies on this one: hashing them in
    // line took a tenth of a save's time.
    std::vector<uint64_t> sums(pages);
    std::atomic<size_t> summed{0};
    std::jthread hasher([&] {
        for (size_t p = 0; p < pages; ++p) {
            sums[p] = checksum64(page_data[p], page_bytes);
            summed.store(p + 1, std::memory_order_release);
            summed.notify_one();
        }
    });
    for (size_t p = 0; p < pages; ++p) {
        STORMO_TRY(put(page_data[p], page_bytes));
        for (size_t done = summed.load(std::memory_order_acquire); done <= p; done = summed.load(std::memory_order_acquire))
            summed.wait(done, std::memory_order_acquire);
        char sum[8];
        put_u64(sum, sums[p]);
        STORMO_TRY(put(sum, sizeof sum));
    }
    for (size_t i = 0; i < session.ring_infos().size(); ++i) {
        const std::span<const float> ring = session.ring_buffer(i);
        STORMO_TRY(put_checked(ring.data(), ring.size_bytes()));
    }
    uint64_t bytes = out.written();
    if (direct) {
        STORMO_TRY_ASSIGN(bytes, direct->finish());
    }
    STORMO_TRY(out.commit());
    return SessionFileStats{bytes, seconds_since(start)};
}

Expected<LoadedSessionFile> load_session_file(const std::string& path, const EngineIdentity& identity,
                                              std::unique_ptr<Session> blank) {
    const auto start = Clock::now();
    STORMO_TRY_ASSIGN(auto fd, FileDescriptor::open_read(path));
    STORMO_TRY_ASSIGN(const uint64_t file_bytes, fd.size(path));
    SectionReader in(fd.get(), file_bytes, path);
    char preamble[kPreambleBytes];
    if (file_bytes < sizeof kMagic) return fail(ErrorKind::format, path + ": not a stormo session file (too short)");
    STORMO_TRY(pread_exact(fd.get(), preamble, std::min<uint64_t>(kPreambleBytes, file_bytes), 0, path));
    if (std::memcmp(preamble, kMagic, sizeof kMagic) != 0)
        return fail(ErrorKind::format, path + ": not a stormo session file (it does not start with STORMO-SESSION)");
    STORMO_TRY(in.read(preamble, kPreambleBytes, "the preamble", false));
    const uint32_t format = get_u32(preamble + sizeof kMagic);
    if (format < kOldestSessionFileFormat || format > kSessionFileFormat)
        return fail(ErrorKind::unsupported, path + ": a session file of format " + std::to_string(format) +
                                                ", this stormo reads formats " + std::to_string(kOldestSessionFileFormat) + " to " +
                                                std::to_string(kSessionFileFormat));
    const uint64_t header_bytes = get_u64(preamble + sizeof kMagic + 8);
    if (header_bytes > kMaxHeaderBytes || header_bytes > file_bytes)
        return fail(ErrorKind::format, path + ": the session file is corrupted (a header of " + std::to_string(header_bytes) + " bytes)");
    std::string header_text(header_bytes, '\0');
    STORMO_TRY(in.read(header_text.data(), header_bytes, "its header"));
    Header h;
    if (!decode(header_text, format, h)) return fail(ErrorKind::format, path + ": the session file is corrupted (its header does not parse)");

    if (const std::string why = identity_mismatch(h.identity, identity); !why.empty())
        return fail(ErrorKind::mismatch, path + ": this session cannot be restored here: " + why);
    Session& session = *blank;
    if (h.position > session.capacity())
        return fail(ErrorKind::resource, path + ": the session holds " + std::to_string(h.position) + " positions, more than the context of " +
                                             std::to_string(session.capacity()) + " (--context raises it)");
    if (h.layout != session.layout())
        return fail(ErrorKind::mismatch, path + ": this session cannot be restored here: it was saved with another context layout (" +
                                             layout_difference(h.layout, session.layout()) + ")");
    if (h.page_floats != session.page_floats() || h.ring_floats.size() != session.ring_infos().size() || h.written_end < h.position)
        return fail(ErrorKind::format, path + ": the session file is corrupted (its sizes contradict its layout)");
    for (size_t i = 0; i < h.ring_floats.size(); ++i) {
        const Session::RingInfo& ring = session.ring_infos()[i];
        if (h.ring_floats[i] == 0 || h.ring_floats[i] % ring.width != 0 || (ring.state && h.ring_floats[i] != ring.width))
            return fail(ErrorKind::format, path + ": the session file is corrupted (its rings contradict its layout)");
    }
    const uint64_t page_bytes = h.page_floats * sizeof(float);
    uint64_t expected = kPreambleBytes + header_bytes + 8 + h.position * sizeof(int32_t) + 8;
    if (page_bytes > 0) expected += Session::pages_for(h.position) * (page_bytes + 8);
    for (uint64_t n : h.ring_floats) expected += n * sizeof(float) + 8;
    if (file_bytes < expected)
        return fail(ErrorKind::format, path + ": the session file is truncated (" + std::to_string(file_bytes) + " bytes of " +
                                           std::to_string(expected) + ")");
    if (file_bytes > expected)
        return fail(ErrorKind::format, path + ": the session file is corrupted (" + std::to_string(file_bytes - expected) +
                                           " bytes past its end)");

    std::vector<int32_t> tokens(h.position);
    STORMO_TRY(in.read(tokens.data(), tokens.size() * sizeof(int32_t), "its tokens"));
    // The pages, then the rings and states, each section checksummed; a ring of another size is
    // read aside and its rows placed below.
    const size_t pages = page_bytes > 0 ? Session::pages_for(h.position) : 0;
    const size_t rings = h.ring_floats.size();
    std::vector<uint64_t> sizes(pages, page_bytes);
    std::vector<std::vector<float>> aside(rings);
    for (size_t i = 0; i < rings; ++i) {
        sizes.push_back(h.ring_floats[i] * sizeof(float));
        if (h.ring_floats[i] != session.ring_buffer(i).size()) aside[i].resize(h.ring_floats[i]);
    }
    auto dst_of = [&](size_t k) -> char* {
        if (k < pages) return reinterpret_cast<char*>(session.own_page(k));  // distinct pages: distinct table entries
        const size_t i = k - pages;
        return reinterpret_cast<char*>(aside[i].empty() ? session.ring_buffer(i).data() : aside[i].data());
    };
    auto name_of = [&](size_t k) {
        if (k < pages) return "the KV page of positions from " + std::to_string(k * Session::kPagePositions);
        return std::string(session.ring_infos()[k - pages].state ? "a recurrent state" : "a sliding window's ring");
    };
    STORMO_TRY(read_sections(path, in.offset(), sizes, dst_of, name_of));
    // The session's furthest write as its rings see it: each ring holds the positions from
    // written_end - rows on, so it is set no lower than any ring's first valid position + rows.
    size_t written_end = h.written_end;
    for (size_t i = 0; i < rings; ++i) {
        if (aside[i].empty()) continue;
        // A ring of another size (the file's run had another rewind slack or block): the rows of
        // the positions both hold carry over; if those miss the window the next query needs,
        // adopt() has the session replay its prefix, as after a long rewind.
        const Session::RingInfo& ring = session.ring_infos()[i];
        const size_t saved_rows = h.ring_floats[i] / ring.width;
        const size_t first_saved = h.written_end > saved_rows ? h.written_end - saved_rows : 0;
        const size_t first = std::max(first_saved, h.position > ring.rows ? h.position - ring.rows : 0);
        for (size_t q = first; q < h.position; ++q)
            std::copy_n(aside[i].data() + (q % saved_rows) * ring.width, ring.width, session.ring_row(i, q));
        written_end = std::max(written_end, first + ring.rows);
    }
    session.adopt(tokens, written_end, h.needs_replay != 0);
    session.set_routed_experts(std::move(h.experts));
    LoadedSessionFile out;
    out.session = std::move(blank);
    out.record = std::move(h.record);
    out.stats = SessionFileStats{file_bytes, seconds_since(start)};
    return out;
}

}  // namespace stormo
