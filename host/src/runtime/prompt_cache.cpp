#include "runtime/prompt_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <list>
#include <system_error>
#include <unordered_map>

#include "runtime/session_bytes.hpp"
#include "util/atomic_file.hpp"
#include "util/content_hash.hpp"
#include "util/file.hpp"

namespace stormo {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[16] = {'S', 'T', 'O', 'R', 'M', 'O', '-', 'K', 'V', 'B', 'L', 'O', 'C', 'K', '\n', '\0'};
constexpr uint32_t kBlockFormat = 1;
constexpr uint64_t kPreambleBytes = sizeof kMagic + 4 + 4 + 8;
constexpr uint64_t kMaxHeaderBytes = uint64_t{64} << 20;
constexpr std::string_view kSuffix = ".block";

using Digest = std::array<uint8_t, 16>;

std::string hex_of(const Digest& d) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(32, '0');
    for (size_t i = 0; i < d.size(); ++i) {
        out[2 * i] = kHex[d[i] >> 4];
        out[2 * i + 1] = kHex[d[i] & 15];
    }
    return out;
}

bool is_key_hex(std::string_view s) {
    return s.size() == 32 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// What a block repeats of its place in the chain, checked against the lookup's.
struct BlockPlace {
    std::string root, parent, key;
    uint64_t index = 0;  // k: the block of positions [(k-1)B, kB)
};

struct RingRows {
    uint64_t first = 0, end = 0;  // positions of the rows stored (a state: its one row)
    std::string_view floats;
};

// A block's parts, viewing the bytes it was decoded from.
struct DecodedBlock {
    std::string_view tokens;                  // B int32
    std::string_view pages;                   // n_pages pages of page_floats floats
    uint64_t first_page = 0;
    std::vector<RingRows> rings;
    std::vector<std::vector<int32_t>> experts;  // per layer
};

std::string encode_block(const BlockPlace& place, const Session& session, size_t block_positions,
                         std::span<const std::vector<int32_t>> experts) {
    const size_t end = place.index * block_positions, begin = end - block_positions;
    ByteWriter header;
    header.text(place.root);
    header.text(place.parent);
    header.text(place.key);
    header.u64(place.index);
    header.u64(block_positions);
    header.u64(session.page_floats());
    const size_t first_page = session.page_floats() > 0 ? begin / Session::kPagePositions : 0;
    const size_t n_pages = session.page_floats() > 0 ? (end - begin) / Session::kPagePositions : 0;
    header.u64(first_page);
    header.u64(n_pages);
    const auto& infos = session.ring_infos();
    header.u64(infos.size());
    std::vector<HeldRows> rows(infos.size());
    for (size_t i = 0; i < infos.size(); ++i) {
        if (infos[i].state) {
            rows[i] = {end, end};
        } else {
            // What a query at `end` or later can see of this block, as far as the ring still holds it.
            const HeldRows held = ring_rows_held(session, i);
            const size_t seen = end + 1 > infos[i].window ? end + 1 - infos[i].window : 0;
            rows[i] = {std::min(end, std::max({begin, seen, held.first})), end};
        }
        header.u64(infos[i].width);
        header.u64(infos[i].state ? 1 : 0);
        header.u64(rows[i].first);
        header.u64(rows[i].end);
    }
    write_expert_lists(header, experts);

    ByteWriter out;
    char preamble[kPreambleBytes];
    std::memcpy(preamble, kMagic, sizeof kMagic);
    put_u32(preamble + sizeof kMagic, kBlockFormat);
    put_u32(preamble + sizeof kMagic + 4, 0);
    put_u64(preamble + sizeof kMagic + 8, header.bytes().size());
    out.raw(preamble, sizeof preamble);
    append_checked(out, header.bytes().data(), header.bytes().size());
    const std::span<const int32_t> tokens = session.tokens().subspan(begin, block_positions);
    append_checked(out, tokens.data(), tokens.size_bytes());
    std::string pages(n_pages * session.page_floats() * sizeof(float), '\0');
    for (size_t p = 0; p < n_pages; ++p)
        std::memcpy(pages.data() + p * session.page_floats() * sizeof(float), session.page(first_page + p),
                    session.page_floats() * sizeof(float));
    append_checked(out, pages.data(), pages.size());
    for (size_t i = 0; i < infos.size(); ++i) {
        const size_t width = infos[i].width;
        std::string floats;
        if (infos[i].state) {
            floats.assign(reinterpret_cast<const char*>(session.ring_buffer(i).data()), width * sizeof(float));
        } else {
            floats.resize((rows[i].end - rows[i].first) * width * sizeof(float));
            for (size_t q = rows[i].first; q < rows[i].end; ++q)
                std::memcpy(floats.data() + (q - rows[i].first) * width * sizeof(float), session.ring_row(i, q), width * sizeof(float));
        }
        append_checked(out, floats.data(), floats.size());
    }
    return std::move(out.bytes());
}

// Checks every part of a block against what the lookup expects of it; the reason on a failure.
Expected<DecodedBlock> decode_block(std::string_view bytes, const BlockPlace& place, std::span<const int32_t> tokens,
                                    const Session& session, size_t block_positions) {
    auto bad = [](std::string why) { return fail(ErrorKind::format, std::move(why)); };
    if (bytes.size() < kPreambleBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return bad("not a prompt-cache block (too short, or another file)");
    if (const uint32_t format = get_u32(bytes.data() + sizeof kMagic); format != kBlockFormat)
        return bad("a block of format " + std::to_string(format) + ", this stormo writes format " + std::to_string(kBlockFormat));
    const uint64_t header_bytes = get_u64(bytes.data() + sizeof kMagic + 8);
    if (header_bytes > kMaxHeaderBytes) return bad("corrupted (a header of " + std::to_string(header_bytes) + " bytes)");
    ByteReader in(bytes.substr(kPreambleBytes));
    std::string_view header_view;
    if (!read_checked(in, header_view, header_bytes)) return bad("truncated or corrupted (its header)");
    ByteReader h(header_view);
    BlockPlace saved;
    uint64_t b = 0, page_floats = 0, first_page = 0, n_pages = 0, n_rings = 0;
    if (!h.text(saved.root) || !h.text(saved.parent) || !h.text(saved.key) || !h.u64(saved.index) || !h.u64(b) ||
        !h.u64(page_floats) || !h.u64(first_page) || !h.u64(n_pages) || !h.u64(n_rings))
        return bad("corrupted (its header does not parse)");
    if (saved.root != place.root) return bad("written by another engine, model, layout or partition (another root key)");
    if (saved.key != place.key || saved.parent != place.parent || saved.index != place.index || b != block_positions)
        return bad("not the block its name says (another key, parent or place in the chain)");
    const auto& infos = session.ring_infos();
    const size_t end = place.index * block_positions, begin = end - block_positions;
    const uint64_t want_pages = session.page_floats() > 0 ? block_positions / Session::kPagePositions : 0;
    if (page_floats != session.page_floats() || n_rings != infos.size() || n_pages != want_pages ||
        (n_pages > 0 && first_page != begin / Session::kPagePositions))
        return bad("another context layout (its pages or rings differ from this session's)");
    DecodedBlock out;
    out.first_page = first_page;
    out.rings.resize(n_rings);
    for (size_t i = 0; i < n_rings; ++i) {
        uint64_t width = 0, state = 0;
        if (!h.u64(width) || !h.u64(state) || !h.u64(out.rings[i].first) || !h.u64(out.rings[i].end))
            return bad("corrupted (its header does not parse)");
        if (width != infos[i].width || (state != 0) != infos[i].state) return bad("another context layout (a ring of another width)");
        if (!state && (out.rings[i].end != end || out.rings[i].first < begin || out.rings[i].first > end))
            return bad("corrupted (a ring's positions are outside the block)");
    }
    if (!read_expert_lists(h, out.experts)) return bad("corrupted (its experts)");
    if (!h.done()) return bad("corrupted (its header has bytes past its end)");
    if (!read_checked(in, out.tokens, block_positions * sizeof(int32_t))) return bad("truncated or corrupted (its tokens)");
    if (std::memcmp(out.tokens.data(), tokens.data(), out.tokens.size()) != 0)
        return bad("another prefix under the same key (its tokens differ)");
    if (!read_checked(in, out.pages, n_pages * page_floats * sizeof(float))) return bad("truncated or corrupted (its pages)");
    for (size_t i = 0; i < n_rings; ++i) {
        const uint64_t rows = infos[i].state ? 1 : out.rings[i].end - out.rings[i].first;
        if (!read_checked(in, out.rings[i].floats, rows * infos[i].width * sizeof(float)))
            return bad("truncated or corrupted (a ring's rows)");
    }
    if (!in.done()) return bad("corrupted (bytes past its end)");
    return out;
}

Digest root_key(const EngineIdentity& id, const std::string& layout, size_t block_positions, const std::string& partition) {
    ContentHash h;
    h.update("stormo prompt cache, format 1");
    for (const std::string* s : {&id.model, &id.config, &id.engine, &id.kernels, &layout, &partition}) h.update_u64(s->size()).update(*s);
    h.update_u64(block_positions);
    return h.digest();
}

Digest child_key(const Digest& parent, std::span<const int32_t> tokens) {
    ContentHash h;
    h.update(parent.data(), parent.size());
    for (int32_t t : tokens) h.update_u64(static_cast<uint64_t>(static_cast<uint32_t>(t)));
    return h.digest();
}

using Bytes = std::shared_ptr<const std::string>;

}  // namespace

std::string cache_partition(std::string_view api_key) {
    if (api_key.empty()) return {};
    ContentHash h;
    h.update("stormo prompt cache partition");
    h.update_u64(api_key.size()).update(api_key);
    return h.hex();
}

struct PromptCache::Impl {
    PromptCacheSettings settings;
    EngineIdentity identity;
    std::string layout;
    PromptCacheStats stats;
    std::string last_drop, last_write_error;
    int64_t last_stamp = 0;  // the last time given a block file (ns since the epoch)

    // Least recently used first, in both tiers.
    std::list<std::string> disk_order;
    struct DiskEntry {
        uint64_t bytes = 0;
        std::list<std::string>::iterator at;
    };
    std::unordered_map<std::string, DiskEntry> disk;
    std::list<std::string> memory_order;
    struct MemoryEntry {
        Bytes bytes;
        std::list<std::string>::iterator at;
    };
    std::unordered_map<std::string, MemoryEntry> memory;

    std::string path_of(const std::string& key) const { return settings.dir + "/" + key.substr(0, 2) + "/" + key + std::string(kSuffix); }

    // The chain's keys of the first `blocks` blocks of `tokens` (keys[0] is the root).
    std::vector<Digest> chain(std::span<const int32_t> tokens, size_t blocks, const std::string& partition) const {
        std::vector<Digest> keys{root_key(identity, layout, settings.block_positions, partition)};
        const size_t b = settings.block_positions;
        for (size_t k = 1; k <= blocks; ++k) keys.push_back(child_key(keys.back(), tokens.subspan((k - 1) * b, b)));
        return keys;
    }

    bool cached(const std::string& key) const { return memory.contains(key) || disk.contains(key); }

    void forget_disk(const std::string& key) {
        auto it = disk.find(key);
        if (it == disk.end()) return;
        stats.disk_bytes -= it->second.bytes;
        --stats.disk_blocks;
        disk_order.erase(it->second.at);
        disk.erase(it);
    }

    void forget_memory(const std::string& key) {
        auto it = memory.find(key);
        if (it == memory.end()) return;
        stats.memory_bytes -= it->second.bytes->size();
        memory_order.erase(it->second.at);
        memory.erase(it);
    }

    void drop(const std::string& key, const std::string& why) {
        std::error_code ec;
        fs::remove(path_of(key), ec);
        forget_disk(key);
        forget_memory(key);
        ++stats.blocks_dropped;
        last_drop = "block " + key + ": " + why;
    }

    void index_disk(const std::string& key, uint64_t bytes) {
        forget_disk(key);
        disk_order.push_back(key);
        disk[key] = DiskEntry{bytes, std::prev(disk_order.end())};
        stats.disk_bytes += bytes;
        ++stats.disk_blocks;
    }

    void keep_in_memory(const std::string& key, Bytes bytes) {
        if (settings.memory_bytes == 0 || bytes->size() > settings.memory_bytes) return;
        forget_memory(key);
        memory_order.push_back(key);
        stats.memory_bytes += bytes->size();
        memory[key] = MemoryEntry{std::move(bytes), std::prev(memory_order.end())};
        while (stats.memory_bytes > settings.memory_bytes && !memory_order.empty()) forget_memory(memory_order.front());
    }

    // A use: the most recent in the index, and on the disk, where the file's time orders the
    // index at the next start. The times given are distinct and increasing: the clock the file
    // system stamps files with ticks in milliseconds, and two uses within one tick would tie.
    void touch_disk(const std::string& key) {
        auto it = disk.find(key);
        if (it == disk.end()) return;
        disk_order.splice(disk_order.end(), disk_order, it->second.at);
        stamp(key);
    }

    void stamp(const std::string& key) {
        const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch());
        last_stamp = std::max<int64_t>(now.count(), last_stamp + 1);
        const timespec times[2] = {{static_cast<time_t>(last_stamp / 1000000000), static_cast<long>(last_stamp % 1000000000)},
                                   {static_cast<time_t>(last_stamp / 1000000000), static_cast<long>(last_stamp % 1000000000)}};
        ::utimensat(AT_FDCWD, path_of(key).c_str(), times, 0);
    }

    void touch_memory(const std::string& key) {
        auto it = memory.find(key);
        if (it != memory.end()) memory_order.splice(memory_order.end(), memory_order, it->second.at);
    }

    void evict_to_fit() {
        while (stats.disk_bytes > settings.size_bytes && !disk_order.empty()) {
            const std::string key = disk_order.front();
            std::error_code ec;
            fs::remove(path_of(key), ec);
            forget_disk(key);
            ++stats.blocks_evicted;
        }
    }

    // A block's bytes from memory or the disk; nullptr when it is in neither (or cannot be read,
    // which drops it).
    Bytes bytes_of(const std::string& key, bool& from_memory) {
        if (auto it = memory.find(key); it != memory.end()) {
            from_memory = true;
            return it->second.bytes;
        }
        from_memory = false;
        if (!disk.contains(key)) return nullptr;
        // No block is larger than the disk tier's cap (larger ones are never written).
        auto bytes = read_file(path_of(key), settings.size_bytes, "a prompt cache block");
        if (!bytes) {
            drop(key, "cannot be read (" + bytes.error().message + ")");
            return nullptr;
        }
        return std::make_shared<const std::string>(std::move(*bytes));
    }

    Expected<void> open_dir() {
        std::error_code ec;
        fs::create_directories(settings.dir, ec);
        if (ec) return fail(ErrorKind::io, "the prompt cache directory " + settings.dir + ": " + ec.message());
        if (!fs::is_directory(settings.dir, ec))
            return fail(ErrorKind::io, "the prompt cache directory " + settings.dir + " is not a directory");
        struct Found {
            fs::file_time_type time;
            std::string key;
            uint64_t bytes;
        };
        std::vector<Found> found;
        for (const auto& sub : fs::directory_iterator(settings.dir, ec)) {
            const std::string sub_name = sub.path().filename().string();
            if (is_atomic_temp_name(sub_name)) {
                fs::remove(sub.path(), ec);
                continue;
            }
            if (!sub.is_directory(ec) || sub_name.size() != 2) continue;
            for (const auto& entry : fs::directory_iterator(sub.path(), ec)) {
                const std::string name = entry.path().filename().string();
                if (is_atomic_temp_name(name)) {  // what a kill during a write left
                    fs::remove(entry.path(), ec);
                    continue;
                }
                if (!name.ends_with(kSuffix)) continue;
                const std::string key = name.substr(0, name.size() - kSuffix.size());
                if (!is_key_hex(key) || key.substr(0, 2) != sub_name || !entry.is_regular_file(ec)) continue;
                found.push_back({entry.last_write_time(ec), key, entry.file_size(ec)});
            }
        }
        if (ec) return fail(ErrorKind::io, "reading the prompt cache directory " + settings.dir + ": " + ec.message());
        std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return std::tie(a.time, a.key) < std::tie(b.time, b.key); });
        for (const Found& f : found) {
            index_disk(f.key, f.bytes);
            const auto since_epoch = std::chrono::file_clock::to_sys(f.time).time_since_epoch();
            last_stamp = std::max<int64_t>(last_stamp, std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch).count());
        }
        evict_to_fit();
        return {};
    }

    Expected<void> write_block(const std::string& key, const std::string& bytes) {
        const std::string path = path_of(key);
        std::error_code ec;
        fs::create_directories(fs::path(path).parent_path(), ec);
        if (ec) return fail(ErrorKind::io, "the prompt cache block " + path + ": " + ec.message());
        STORMO_TRY_ASSIGN(auto out, AtomicFileWriter::create(path, "the prompt cache block " + path));
        STORMO_TRY(out.write(bytes.data(), bytes.size()));
        return out.commit();
    }
};

PromptCache::PromptCache(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PromptCache::~PromptCache() = default;

Expected<std::unique_ptr<PromptCache>> PromptCache::open(PromptCacheSettings settings, EngineIdentity identity, std::string layout) {
    if (settings.block_positions == 0 || settings.block_positions % Session::kPagePositions != 0)
        return fail(ErrorKind::invalid_argument, "prompt cache blocks of " + std::to_string(settings.block_positions) +
                                                     " positions: they must be a multiple of " +
                                                     std::to_string(Session::kPagePositions));
    if (settings.dir.empty()) return fail(ErrorKind::invalid_argument, "the prompt cache needs a directory");
    auto impl = std::make_unique<Impl>();
    impl->settings = std::move(settings);
    impl->identity = std::move(identity);
    impl->layout = std::move(layout);
    STORMO_TRY(impl->open_dir());
    return std::unique_ptr<PromptCache>(new PromptCache(std::move(impl)));
}

size_t PromptCache::block_positions() const { return impl_->settings.block_positions; }

Expected<PromptCacheHit> PromptCache::restore(Session& session, std::span<const int32_t> prompt, size_t max_positions,
                                              size_t held, const std::string& partition) {
    Impl& c = *impl_;
    ++c.stats.lookups;
    const size_t b = c.settings.block_positions;
    // A session that owes a replay may not hold the rows of its own prefix: take all of it.
    if (session.needs_replay()) held = 0;
    const size_t most = std::min({max_positions, prompt.size(), session.capacity()}) / b;
    if (most * b <= held) return PromptCacheHit{};
    const std::vector<Digest> keys = c.chain(prompt, most, partition);
    std::vector<std::string> hex(keys.size());
    for (size_t k = 0; k < keys.size(); ++k) hex[k] = hex_of(keys[k]);
    const auto& infos = session.ring_infos();
    // The rows each ring of the session holds of the prefix it keeps: [own_first[i], held).
    std::vector<size_t> own_first(infos.size(), held);
    for (size_t i = 0; i < infos.size(); ++i)
        if (!infos[i].state && held > 0) own_first[i] = std::min(held, ring_rows_held(session, i).first);
    for (size_t m = most; m * b > held;) {
        const size_t end = m * b;
        // The blocks the restore reads: those past what the session holds, and before them those
        // holding rows a ring needs (the window before `end`) that the session's ring does not.
        size_t low = held;
        for (size_t i = 0; i < infos.size(); ++i) {
            const size_t seen = end + 1 > infos[i].window ? end + 1 - infos[i].window : 0;
            if (!infos[i].state && own_first[i] > seen) low = std::min(low, seen);
        }
        const size_t first_block = low / b + 1;
        size_t missing = 0;
        for (size_t k = m; k >= first_block; --k)
            if (!c.cached(hex[k])) {
                missing = k;
                break;
            }
        if (missing != 0) {
            m = missing - 1;
            continue;
        }
        std::vector<Bytes> bytes(m + 1);
        std::vector<DecodedBlock> blocks(m + 1);
        std::vector<char> from_memory(m + 1, 0);
        size_t failed = 0;
        for (size_t k = first_block; k <= m; ++k) {
            bool memory = false;
            bytes[k] = c.bytes_of(hex[k], memory);
            from_memory[k] = memory;
            if (!bytes[k]) {
                failed = k;
                break;
            }
            const BlockPlace place{hex[0], hex[k - 1], hex[k], k};
            auto decoded = decode_block(*bytes[k], place, prompt.subspan((k - 1) * b, b), session, b);
            if (!decoded) {
                c.drop(hex[k], decoded.error().message);
                failed = k;
                break;
            }
            blocks[k] = std::move(*decoded);
        }
        if (failed != 0) {
            m = failed - 1;
            continue;
        }

        // Every block read checks out: write them in.
        const size_t page_floats = session.page_floats();
        for (size_t k = first_block; k <= m; ++k) {
            const DecodedBlock& block = blocks[k];
            const size_t pages = page_floats > 0 ? b / Session::kPagePositions : 0;
            for (size_t i = 0; i < pages; ++i) {
                const size_t p = block.first_page + i;
                if ((p + 1) * Session::kPagePositions <= held) continue;
                std::memcpy(session.own_page(p), block.pages.data() + i * page_floats * sizeof(float), page_floats * sizeof(float));
            }
        }
        size_t written_end = end;
        for (size_t i = 0; i < infos.size(); ++i) {
            const size_t width = infos[i].width;
            if (infos[i].state) {
                std::memcpy(session.ring_row(i, end), blocks[m].rings[i].floats.data(), width * sizeof(float));
                continue;
            }
            // Rows by position, newest block first, while they join up and the ring has room.
            const size_t floor = end > infos[i].rows ? end - infos[i].rows : 0;
            size_t lowest = end;
            for (size_t k = m; k >= first_block && lowest > floor; --k) {
                const RingRows& rows = blocks[k].rings[i];
                if (rows.end != lowest || rows.first >= lowest) break;
                const size_t from = std::max<size_t>(rows.first, floor);
                for (size_t q = from; q < lowest; ++q)
                    std::memcpy(session.ring_row(i, q), rows.floats.data() + (q - rows.first) * width * sizeof(float), width * sizeof(float));
                lowest = from;
                if (rows.first > (k - 1) * b) break;  // the block did not hold all of its range
            }
            // The session's own rows of the prefix it keeps join on (a row from a block below
            // `held` has the same bits in the same place).
            if (lowest <= held) lowest = std::max(std::min(lowest, own_first[i]), floor);
            // The ring then holds exactly [lowest, end): written_end - rows must not reach below it.
            written_end = std::max(written_end, lowest + infos[i].rows);
        }
        session.adopt(prompt.first(end), written_end, false);

        PromptCacheHit hit;
        hit.positions = end;
        hit.experts = blocks[m].experts;
        for (size_t k = first_block; k <= m; ++k) {
            if (from_memory[k]) {
                ++c.stats.memory_hits;
                c.touch_memory(hex[k]);
            } else {
                ++c.stats.disk_hits;
                c.keep_in_memory(hex[k], bytes[k]);
            }
            c.touch_disk(hex[k]);
        }
        c.stats.positions_restored += end - held;
        return hit;
    }
    return PromptCacheHit{};
}

Expected<void> PromptCache::capture(const Session& session, size_t since, const std::string& partition,
                                    std::span<const std::vector<int32_t>> experts) {
    Impl& c = *impl_;
    const size_t b = c.settings.block_positions;
    const size_t position = session.position();
    // A session that owes a replay holds rows nobody should trust yet.
    if (position < b || session.needs_replay()) return {};
    const auto& infos = session.ring_infos();
    const bool has_state = std::any_of(infos.begin(), infos.end(), [](const Session::RingInfo& r) { return r.state; });
    // A recurrent state is the one at the session's position: only the block ending there has it.
    if (has_state && position % b != 0) return {};
    const size_t last = position / b;
    const std::vector<Digest> keys = c.chain(session.tokens(), last, partition);
    // The blocks ending in the step (several when a chunk spans them), those the session still
    // holds every row of.
    auto holds = [&](size_t k) {
        const size_t begin = (k - 1) * b, end = k * b;
        for (size_t p = begin / Session::kPagePositions; session.page_floats() > 0 && p < end / Session::kPagePositions; ++p)
            if (session.page(p) == nullptr) return false;
        for (size_t i = 0; i < infos.size(); ++i) {
            if (infos[i].state) continue;
            const size_t seen = end + 1 > infos[i].window ? end + 1 - infos[i].window : 0;
            if (ring_rows_held(session, i).first > std::max(begin, seen)) return false;
        }
        return true;
    };
    for (size_t k = std::max<size_t>(since / b + 1, has_state ? last : 1); k <= last; ++k) {
        const std::string key = hex_of(keys[k]);
        if (c.cached(key) || !holds(k)) continue;
        const BlockPlace place{hex_of(keys[0]), hex_of(keys[k - 1]), key, k};
        auto bytes = std::make_shared<const std::string>(encode_block(place, session, b, experts));
        c.keep_in_memory(key, bytes);
        if (bytes->size() > c.settings.size_bytes) continue;  // larger than the whole disk tier
        if (auto written = c.write_block(key, *bytes); !written) {
            ++c.stats.write_errors;
            c.last_write_error = written.error().message;
            return tl::unexpected(written.error());
        }
        ++c.stats.blocks_written;
        c.index_disk(key, bytes->size());
        c.stamp(key);
        c.evict_to_fit();
    }
    return {};
}

PromptCacheStats PromptCache::stats() const { return impl_->stats; }
std::string PromptCache::last_drop_reason() const { return impl_->last_drop; }
std::string PromptCache::last_write_error() const { return impl_->last_write_error; }
const std::string& PromptCache::dir() const { return impl_->settings.dir; }

}  // namespace stormo
