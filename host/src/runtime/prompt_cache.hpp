#pragma once
// The prompt cache: the KV of prompt prefixes in blocks of `block_positions` positions, kept in
// memory and on disk, looked up by longest prefix and restored into a session bit for bit, so a
// prefix computed once (a system prompt, tool definitions, a long document) is never computed
// again, by any slot, after a restart too.
//
// A block k holds, for positions [(k-1)B, kB): their tokens; the rows of every full-attention
// buffer (the pages of those positions); for every sliding window's ring, every row the session
// held at kB of a position in that range that a query at kB or later can see (from kB - window + 1
// on; after a rewind the ring may hold fewer, and the block says which positions it has, so a
// restore never takes a row nobody wrote); every recurrent state as it is at kB; and, per layer,
// the experts the block's last tokens routed to (prefetched on restore, so the first steps after a
// hit do not all miss). A restore of m blocks takes the pages of the blocks past what the session
// holds, the ring rows of the last blocks by position (rings of another size take the rows they
// have room for, as session files do) and the states of block m; when the rows restored do not
// cover a window the next query needs, the session replays its prefix (exact, not faster).
//
// Blocks are keyed by a chain of hashes: key(0) = hash(engine identity, session layout, B,
// partition), key(k) = hash(key(k-1), the block's tokens); a block file is
// `<dir>/<first 2 hex digits>/<32 hex digits>.block`, named by its key (never by client text), and
// repeats its root key, its parent's key, its own and its tokens, which a lookup checks, so a hash
// collision or a file of another engine cannot restore another prefix. Every part carries an
// XXH3-64 checksum; a block that fails a check is deleted, counted (stats().blocks_dropped, the
// reason in last_drop_reason()) and is a miss the caller computes.
//
// Blocks are captured at the end of the step they end in: a step's chunk may complete several,
// whose rows the session still holds then (its rings keep a window and a step's rows). A
// recurrent state exists only as it is at the step's end, so for a model with one the scheduler
// ends prompt chunks at multiples of B (BatchSettings::chunk_boundary) and only the block ending
// at the position is captured. Memory keeps the most recently used blocks up to
// memory_bytes; the disk keeps them up to size_bytes, least recently used evicted first (a use
// sets the file's modification time, so the order survives restarts). Written atomically
// (util/atomic_file.hpp): a kill or a full disk leaves no block that loads, and a write that fails
// is counted (stats().write_errors, the message in last_write_error()), never the request's error.
//
// Partitions: a block is found only by requests of the partition that wrote it (a hash of the
// API key), unless the operator allows sharing (--cache-share: every request uses one partition),
// because a cache hit's speed tells one client what another asked.
//
// One thread (the server's worker) calls it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/engine_identity.hpp"
#include "runtime/session.hpp"
#include "stormo/error.hpp"

namespace stormo {

struct PromptCacheSettings {
    std::string dir;                    // created when missing; the server's alone
    uint64_t size_bytes = 0;            // the disk's cap
    uint64_t memory_bytes = 0;          // the memory tier's cap (0: no memory tier)
    size_t block_positions = 32;        // B: a multiple of Session::kPagePositions
};

struct PromptCacheStats {
    uint64_t lookups = 0;
    uint64_t memory_hits = 0;           // blocks restored from memory
    uint64_t disk_hits = 0;             // blocks restored from disk
    uint64_t positions_restored = 0;
    uint64_t blocks_written = 0;
    uint64_t blocks_evicted = 0;        // from the disk, to fit size_bytes
    uint64_t blocks_dropped = 0;        // failed a check (corrupted, truncated, foreign) and deleted
    uint64_t write_errors = 0;          // blocks that could not be written (a full disk, no permission)
    uint64_t disk_bytes = 0;            // held on disk now
    uint64_t memory_bytes = 0;          // held in memory now
    uint64_t disk_blocks = 0;
};

struct PromptCacheHit {
    size_t positions = 0;               // restored into the session: a multiple of B, 0 on a miss
    // Per layer, the experts the last restored block's tokens routed to (empty lists on a miss).
    std::vector<std::vector<int32_t>> experts;
};

// The partition of a request that authenticated with `api_key`: a hash of it (32 hex digits), so
// the key itself is kept nowhere; "" (one shared partition) for no key.
std::string cache_partition(std::string_view api_key);

class PromptCache {
public:
    // Opens (creating) the directory, removes temporary files a crash left, and indexes the blocks
    // there (oldest use first) against the cap. `layout` is Session::layout() of the sessions it
    // will serve.
    static Expected<std::unique_ptr<PromptCache>> open(PromptCacheSettings settings, EngineIdentity identity,
                                                       std::string layout);
    ~PromptCache();

    size_t block_positions() const;

    // Restores into `session` the longest cached prefix of `prompt` of at most `max_positions`
    // positions, in whole blocks, when it is longer than what the session already holds of it
    // (`held`, from reusable_prefix); the session then holds exactly those positions. A miss or a
    // block that fails its check leaves the session as it was.
    Expected<PromptCacheHit> restore(Session& session, std::span<const int32_t> prompt, size_t max_positions,
                                     size_t held, const std::string& partition);

    // Called after a step that took `session` from position `since` past a multiple of B: stores
    // the blocks ending in (since, position] that are not cached yet and whose rows the session
    // still holds, each with `experts` (per layer, the experts the step's last rows of this
    // session chose: a prefetch hint; may be empty). Errors writing the disk are counted and
    // reported, never fatal to the request: the block just stays uncached.
    Expected<void> capture(const Session& session, size_t since, const std::string& partition,
                           std::span<const std::vector<int32_t>> experts);

    PromptCacheStats stats() const;
    // Why the last block dropped was dropped, and the last write error (empty: none yet).
    std::string last_drop_reason() const;
    std::string last_write_error() const;
    const std::string& dir() const;

private:
    struct Impl;
    explicit PromptCache(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace stormo
