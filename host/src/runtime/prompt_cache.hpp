#pragma once
// The prompt cache: the KV of prompt prefixes in blocks of `block_positions` positions, kept in
// memory and on disk, looked up by longest prefix and restored into a session bit for bit, so a
// prefix computed once (a system prompt, tool definitions, a long document) is never computed
// again, by any slot, after a restart too.
//
// A block k holds, for positions [(k-1)B, kB): the rows of every full-attention buffer (its
// pages), the rows of every sliding window's ring that a query at kB still sees (the window's
// tail), every recurrent state as it is at kB, and the experts the block's last tokens routed to
// (prefetched on restore, so the first steps after a hit do not all miss). It is keyed by a chain
// of hashes: key(0) = hash(engine identity, session layout, B, partition), key(k) =
// hash(key(k-1), the block's tokens); a block file is named by its key's hex digits (never by
// client text) and repeats its tokens and its parent's key, which a lookup checks, so a hash
// collision cannot restore another prefix. Every block carries XXH3 checksums; one that fails them
// is deleted, counted (stats().blocks_dropped) and recomputed by the caller as a miss.
//
// Blocks are captured when a sequence's position reaches a multiple of B at the end of a step
// (the scheduler aligns prompt chunks to B: BatchSettings::chunk_boundary), where the session
// holds everything the block needs. Memory keeps the most recently used blocks up to
// memory_bytes; the disk keeps them up to size_bytes, least recently used evicted first. Written
// atomically (util/atomic_file.hpp): a kill or a full disk leaves no block that loads.
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
#include <vector>

#include "runtime/engine_identity.hpp"
#include "runtime/session.hpp"
#include "stormo/error.hpp"

namespace stormo {

struct PromptCacheSettings {
    std::string dir;                    // created when missing; the server's alone
    uint64_t size_bytes = 0;            // the disk's cap
    uint64_t memory_bytes = 0;          // the memory tier's cap (0: no memory tier)
    size_t block_positions = 256;       // B: a multiple of Session::kPagePositions
};

struct PromptCacheStats {
    uint64_t lookups = 0;
    uint64_t memory_hits = 0;           // blocks restored from memory
    uint64_t disk_hits = 0;             // blocks restored from disk
    uint64_t positions_restored = 0;
    uint64_t blocks_written = 0;
    uint64_t blocks_evicted = 0;        // from the disk, to fit size_bytes
    uint64_t blocks_dropped = 0;        // failed a check (corrupted, truncated, foreign) and deleted
    uint64_t disk_bytes = 0;            // held on disk now
    uint64_t memory_bytes = 0;          // held in memory now
    uint64_t disk_blocks = 0;
};

struct PromptCacheHit {
    size_t positions = 0;               // restored into the session: a multiple of B, 0 on a miss
    // Per layer, the experts the last restored block's tokens routed to (empty lists on a miss).
    std::vector<std::vector<int32_t>> experts;
};

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

    // Called after a step in which `session` advanced: when its position is a multiple of B,
    // stores the block that ends there (unless cached), with `experts` (per layer, the experts the
    // step's rows of this session chose; may be empty). Errors writing the disk are counted and
    // reported, never fatal to the request: the block just stays uncached.
    Expected<void> capture(const Session& session, const std::string& partition,
                           std::span<const std::vector<int32_t>> experts);

    PromptCacheStats stats() const;

private:
    struct Impl;
    explicit PromptCache(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace stormo
