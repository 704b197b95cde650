#pragma once
// What saving and restoring a session costs against computing it again, and against this disk:
// a random prompt is prefilled (the cold time to first token), saved to a session file in a
// directory, dropped from the page cache, loaded back (what a restart pays), and continued by one
// token, whose logits must be the bits the session that never stopped gives. The same directory's
// bounds are measured in the same run, interleaved with the save and the load round by round:
// writing as many bytes with fsync (the save's bound), and reading them back past the page cache
// with the disk probe the decode benchmark uses (the load's bound). Times are the medians of the
// rounds; each bound is its best round, as the disk probe keeps its best pass.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/engine.hpp"
#include "stormo/error.hpp"

namespace stormo {

struct SessionIoRequest {
    size_t prompt_tokens = 2048;
    std::string dir;   // where the session file and the probe's file go (removed afterwards)
    uint64_t seed = 0;
    size_t rounds = 3;  // of save, write probe, load, page-cache load, read probe; medians reported
    std::function<void(const char* stage, size_t done, size_t total)> on_progress;
};

struct SessionIoRun {
    size_t rounds = 0;
    size_t positions = 0;
    uint64_t kv_bytes = 0;          // the session's KV in memory (pages and rings)
    uint64_t file_bytes = 0;
    double prefill_seconds = 0.0;   // the prompt computed: a cold time to first token
    double save_seconds = 0.0;      // written to a new file, fsync'd and renamed
    double replace_seconds = 0.0;   // the same over the previous file (its blocks freed in the rename)
    double load_seconds = 0.0;      // read from the disk (the file dropped from the page cache) and checked
    double load_cached_seconds = 0.0;  // the same with the file in the page cache
    bool page_cache_dropped = false;   // the kernel took the hint; else load_seconds read from memory
    bool continues_exactly = false;    // the next token's logits bits equal the uninterrupted session's
    double write_bound_bytes_per_s = 0.0;  // the same bytes written and fsync'd in 8 MiB writes (the better of buffered and direct), best round
    double read_bound_bytes_per_s = 0.0;   // the disk probe reading the session file itself, best round
    bool read_bound_direct = false;
    // Each round's bytes a second: save, write probe, load from the disk, read probe.
    std::vector<double> save_rates, write_rates, load_rates, read_rates;
    // The median over rounds of each round's save / write probe and load / read probe.
    double save_pair_ratio = 0.0;
    double load_pair_ratio = 0.0;
};

Expected<SessionIoRun> run_session_io_bench(Engine& engine, const SessionIoRequest& request);

}  // namespace stormo
