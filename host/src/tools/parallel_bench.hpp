#pragma once
// The benchmark of continuous batching: N sequences of different seeded random prompts arrive at
// once and run together through the batch scheduler, each generating exactly G tokens greedily.
// The same run then generates sequence 0 alone (run_bench's measured run, whose prompt it is), so
// the ratios are taken on one machine state, and checks that its tokens are the ones it got in the
// batch: a batched sequence must be the same bits as the same sequence alone.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "runtime/batch_scheduler.hpp"
#include "runtime/engine.hpp"
#include "store/expert_store.hpp"
#include "stormo/export.hpp"
#include "tools/bench.hpp"

namespace stormo {

struct ParallelBenchRequest {
    size_t sequences = 2;
    size_t prompt_tokens = 64;
    size_t gen_tokens = 16;  // at least 2: the first token belongs to prefill
    uint64_t seed = 0;
    // A warm-up batch first: as many sequences, each a prompt of the same length (other random
    // tokens) and one decode step, for the reason BenchRequest::warmup gives.
    bool warmup = true;
    bool baseline = true;  // sequence 0 alone after the batch
    BatchSettings batch;
    // Progress: ("prefill", prompt positions done, all prompts' positions) and ("decode", tokens
    // generated, N x gen_tokens) after each step of the batch; then run_bench's for the baseline.
    std::function<void(const char* stage, size_t done, size_t total)> on_progress;
};

// The expert store's counters summed over some steps.
struct StoreTraffic {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t bytes_read = 0;
    uint64_t prefetch_issued = 0;
    double read_wait_seconds = 0.0;
};

struct ParallelBenchRun {
    size_t sequences = 0;
    size_t prompt_tokens = 0;   // each sequence's
    size_t gen_tokens = 0;      // each sequence's
    size_t step_rows = 0;       // the scheduler's rows a step at most
    bool warmed_up = false;
    double seconds = 0.0;       // the batch, from its start to its last token
    size_t steps = 0;           // scheduler steps of the batch
    // Steps with decode rows only (every prompt done), their wall time, the tokens they generated
    // (one a decode row), and how many of them had a row from every sequence.
    size_t decode_steps = 0;
    size_t full_decode_steps = 0;
    uint64_t decode_tokens = 0;
    double decode_seconds = 0.0;
    StoreTraffic decode_store;  // the store's counters over the decode steps
    // Over the decode steps and their MoE layers: the distinct experts a layer's rows chose (the
    // union, read once for all the rows), summed, and the layer passes counted.
    uint64_t decode_distinct_experts = 0;
    uint64_t decode_moe_passes = 0;
    // Per sequence: its first and last tokens' times from the start of the batch (every prompt
    // arrives at the start), its decode time (the end of its prompt to its last token), its tokens.
    std::vector<double> first_token_seconds;
    std::vector<double> last_token_seconds;
    std::vector<double> sequence_decode_seconds;
    std::vector<std::vector<int32_t>> tokens;
    ExpertStoreStats before, after;  // the store's counters around the batch
    uint64_t kv_bytes = 0;           // the N sessions' KV caches
    uint64_t peak_rss_bytes = 0;     // after the batch (the baseline adds no session of its size)
    std::optional<BenchRun> alone;   // sequence 0 alone after the batch (ParallelBenchRequest::baseline)
};

// The batch, then the baseline. Sequence i's prompt is the i-th run of prompt_tokens draws of
// draw_prompt from the seed, so sequence 0's is run_bench's measured prompt. A sequence that fails fails the run; the tokens are compared by
// the caller (parallel_tokens_match), so a mismatch still comes with its figures.
STORMO_API Expected<ParallelBenchRun> run_parallel_bench(Engine& engine, const ParallelBenchRequest& request);

// Whether sequence 0 of the batch generated the tokens it generated alone; nullopt without a
// baseline. On a mismatch `where` is the first position that differs.
STORMO_API std::optional<bool> parallel_tokens_match(const ParallelBenchRun& run, size_t* where = nullptr);

struct ParallelBenchReport {
    uint64_t generated_tokens = 0;            // every sequence's, first tokens included
    double aggregate_decode_tokens_per_s = 0.0;  // decode steps' tokens / their wall time
    double sequence_decode_tokens_per_s_mean = 0.0;
    double sequence_decode_tokens_per_s_min = 0.0;
    double first_token_seconds_mean = 0.0;
    double first_token_seconds_max = 0.0;
    double prefill_tokens_per_s = 0.0;        // every prompt's positions / the last first token's time
    double last_token_seconds_mean = 0.0;
    double last_token_seconds_max = 0.0;
    double expert_bytes_read_per_token = 0.0; // decode steps, per token they generated
    double expert_reads_per_token = 0.0;      // misses and prefetches, per token
    double distinct_experts_per_layer = 0.0;  // mean over the decode steps' MoE layer passes
    uint64_t rows_times_top_k = 0;            // N x top_k: what N sequences alone would read a layer
    // Against sequence 0 alone (nullopt without a baseline; the bytes ratio also when alone read
    // nothing from disk).
    std::optional<double> alone_prefill_tokens_per_s;
    std::optional<double> alone_decode_tokens_per_s;
    std::optional<double> alone_first_token_seconds;
    std::optional<double> alone_expert_bytes_read_per_token;
    std::optional<double> alone_expert_reads_per_token;
    std::optional<double> decode_speedup;           // aggregate / alone
    std::optional<double> expert_bytes_per_token_ratio;  // batched / alone
    std::optional<double> first_token_ratio;        // the slowest sequence's / alone's
    std::optional<double> alone_last_token_seconds;  // its prefill and decode times
    std::optional<double> last_token_ratio;         // the slowest sequence's / alone's
};

STORMO_API ParallelBenchReport make_parallel_bench_report(const ParallelBenchRun& run, const DecodeTraffic& traffic);

}  // namespace stormo
