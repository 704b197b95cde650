#pragma once
// The benchmark over an Engine: a seeded random prompt, greedy generation of exactly N tokens,
// and the figures that say how close the engine is to this machine's limits. The limits are
// measured, not assumed: bytes a decode token must touch (from the checkpoint's tensor census)
// over the RAM read bandwidth, and bytes it had to read from disk over the disk's bandwidth.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/engine.hpp"
#include "runtime/remote_experts.hpp"
#include "store/expert_store.hpp"
#include "stormo/export.hpp"
#include "stormo/family.hpp"
#include "tools/bandwidth.hpp"

namespace stormo {

// What one decode token reads from RAM, from the checkpoint's tensors and the family's roles.
struct DecodeTraffic {
    uint64_t dense_bytes = 0;          // every dense matrix and vector once (attention, router,
                                       // norms, dense FFN, head), plus one embedding row
    uint64_t embedding_row_bytes = 0;
    uint64_t expert_bytes = 0;         // one routed expert, every part
    int moe_layers = 0;
    int n_experts = 0;
    int top_k = 0;
    uint64_t kv_bytes_per_position = 0;  // float32 K/V over every layer
    uint64_t head_bytes = 0;           // the LM head matrix (the embedding when tied), in dense_bytes
    uint64_t head_rows = 0;            // its rows (the vocabulary)

    uint64_t routed_bytes() const { return static_cast<uint64_t>(top_k) * expert_bytes * moe_layers; }
    // Bytes touched by a decode step attending over `context` positions (sliding windows are
    // ignored: an upper bound that matters only for long contexts).
    uint64_t bytes_per_token(double context) const;
};

// The census of a checkpoint through its family: roles by tensor name, dimensions from config.json.
// `held_bytes` gives the bytes RAM holds for tensors not held as the checkpoint has them (the
// engine's packed BF16 matrices, Engine::packed_bytes); the others count their checkpoint bytes.
using HeldBytes = std::map<std::string, uint64_t, std::less<>>;
STORMO_API Expected<DecodeTraffic> decode_traffic(const ModelSource& source, const Family& family,
                                                  const HeldBytes& held_bytes = {});

// The byte ranges of every routed-expert tensor the forward pass loads, for the disk read probe.
STORMO_API Expected<std::vector<FileRange>> expert_file_ranges(const ModelSource& source, const Family& family);

// The family an engine runs, from its registry.
STORMO_API Expected<const Family*> engine_family(const Engine& engine);

struct BenchRequest {
    size_t prompt_tokens = 64;
    size_t gen_tokens = 16;  // at least 2: the first token belongs to prefill
    uint64_t seed = 0;
    // Progress: ("prefill", positions done, prompt) per forward block, ("decode", tokens, gen_tokens)
    // per token. Called on the generating thread.
    std::function<void(const char* stage, size_t done, size_t total)> on_progress;
    // A warm-up run before the measured one: a prompt of the same length (other random tokens)
    // and one decode step in a session of its own, as llama-bench (a prompt and a token) and
    // llama-batched-bench (16 tokens) do by default. Without it the measured prefill is the first to touch each expert's memory since
    // the load, which on a machine whose host pages cold guest memory out cost stormo up to 3x.
    bool warmup = true;
    // Called between two decode steps (after every token but the last) on the generating
    // thread; returns the RAM read rate (bytes/s) it measured there. Its time is left out of the
    // decode's. Each step is then set against the memory speed of its own moment: on a shared
    // host the speed changes within seconds (docs/benchmarks.md), so one probe before the run
    // may meet another phase than the decode did.
    std::function<double()> probe_between_steps{};
    // Speculative decoding (docs/speculation.md): after the plain run, the same prompt again in a
    // session of its own with these settings (the engine's --speculate, --draft-max), or with
    // drafts replayed from the plain run's tokens, each draft position right with probability
    // replay_acceptance (seeded by `seed`): the cost side at a stated acceptance.
    SpeculationSettings speculation{};
    std::optional<double> replay_acceptance{};
    // Rounds of a plain and a speculative decode of that prompt, in alternating order: two runs
    // of one process differ by up to a third on a shared host's memory, so the speedup is the
    // median of the rounds' pairs, not one run set against another.
    size_t speculation_rounds = 3;
};

// The speculative runs beside plain ones (BenchRequest::speculation, replay_acceptance,
// speculation_rounds), summed over the rounds but for the per-round times.
struct SpeculativeBenchRun {
    size_t decode_steps = 0;        // tokens after the first, all rounds (each round's = the plain run's)
    double decode_seconds = 0.0;
    bool same_tokens = false;       // every round's ids are the plain run's (the contract)
    SpeculationStats stats;         // drafted, accepted, by source, verify steps, gate choices
    uint64_t acquired = 0;          // experts acquired during its decodes (hits and misses)
    uint64_t misses = 0;
    uint64_t bytes_read = 0;        // expert bytes read from disk during its decodes
    // Each round's decode seconds, plain and speculative (the same prompt and tokens).
    std::vector<double> plain_round_seconds, speculative_round_seconds;
    uint64_t plain_acquired = 0;    // experts acquired during the rounds' plain decodes
    std::optional<double> replay_acceptance;
};

struct BenchRun {
    size_t prompt_tokens = 0;
    size_t generated_tokens = 0;
    size_t decode_steps = 0;       // forward passes after prefill (generated - 1)
    double prefill_seconds = 0.0;  // prompt forward
    double decode_seconds = 0.0;   // every later forward, and the sampling of every token
    ExpertStoreStats before;       // the store's counters at the start
    ExpertStoreStats after_prefill;
    ExpertStoreStats after;
    ForwardTimes times;            // the pipeline's totals, this run only
    ForwardTimes decode_times;     // the same over the decode steps alone (after the first token)
    // The head during the decode steps: steps read by bound, and the rows computed exactly over
    // all decode steps (vocab per full-head step, the candidates per bounded step).
    uint64_t decode_bounded_head_steps = 0;
    uint64_t decode_head_rows_exact = 0;
    uint64_t compact_head_bytes = 0;  // the compact copy a bounded step reads whole (0: none)
    uint64_t peak_rss_bytes = 0;   // after the run
    bool warmed_up = false;        // a warm-up run came first (BenchRequest::warmup)
    std::vector<int32_t> tokens;   // the generated ids
    uint64_t kv_bytes = 0;         // the measured session's KV cache
    // With BenchRequest::probe_between_steps: each decode step's own time (the probes left out)
    // and the probe's rate taken right after it (the last step has none).
    std::vector<double> step_seconds;
    std::vector<double> step_probe_bytes_per_s;
    uint64_t decode_acquired = 0;  // experts acquired during the plain decode (hits and misses)
    // Under mpirun (docs/distributed.md): what rank 0 exchanged with the other ranks during the
    // decode steps alone; nullopt in one process.
    std::optional<RemoteExpertStats> decode_ranks;
    std::optional<SpeculativeBenchRun> speculative;
};

// The next `n` random prompt ids from `rng`, uniform in [0, vocab).
STORMO_API std::vector<int32_t> draw_prompt(std::mt19937_64& rng, size_t vocab, size_t n);

// The middle value (the mean of the two middle ones for an even count); 0 for none.
STORMO_API double median(std::vector<double> values);

// Random prompt ids (uniform in the vocabulary, from the seed: the first prompt_tokens draws of
// draw_prompt), greedy sampling, no stop ids, so exactly gen_tokens come out.
STORMO_API Expected<BenchRun> run_bench(Engine& engine, const BenchRequest& request);

// Every figure `stormo bench` prints; nullopt where a figure has no meaning (no misses: no disk
// bound).
// Where a decode step's time goes, in seconds per step: attention (with its norm), the FFN or
// experts (with their norm: routing, expert reads waited for, expert matmuls, the reduce), the
// head (final norm and logits or the bounded argmax), and the rest (embedding, residual adds,
// finiteness checks, sampling).
struct DecodeStepTime {
    double attention = 0.0;
    double ffn = 0.0;
    double head = 0.0;
    double other = 0.0;
};

// The decode steps' exchanges with the other ranks of an mpirun, per decode token and per layer
// exchange (one MoE layer of one step that had experts elsewhere).
struct RankTraffic {
    double bytes_sent_per_token = 0.0;
    double bytes_received_per_token = 0.0;
    double messages_per_token = 0.0;
    double exchanges_per_token = 0.0;
    double wait_seconds_per_token = 0.0;     // rank 0 waiting for the others after its own experts
    double wait_seconds_per_exchange = 0.0;
    double wait_share = 0.0;                 // of decode time
};

struct BenchReport {
    double prefill_tokens_per_s = 0.0;
    double decode_tokens_per_s = 0.0;
    DecodeStepTime decode_step;
    double prefill_expert_hit_rate = 0.0;
    double expert_hit_rate = 0.0;              // decode steps
    double expert_bytes_read_per_token = 0.0;  // decode steps, misses and prefetches
    double read_wait_share = 0.0;              // of decode time
    // The decode's expert bytes read over the time a read was in flight (ExpertStoreStats::
    // read_busy_seconds): the disk's speed as the store got it, and that over the disk probe's.
    std::optional<double> store_read_bytes_per_s;
    std::optional<double> store_read_ratio;
    uint64_t bytes_touched_per_token = 0;      // what a decode token reads, the head as actually read
    double routed_bytes_per_token = 0.0;       // its routed experts: top-k of every MoE layer, or under
                                               // mpirun the ones this rank computed
    double head_bytes_read_per_token = 0.0;    // the compact copy plus the exact rows, or the whole head
    double head_exact_rows_per_token = 0.0;
    double mean_decode_context = 0.0;
    double memory_bound_tokens_per_s = 0.0;
    std::optional<double> disk_bound_tokens_per_s;
    double memory_bound_ratio = 0.0;           // achieved decode / bound
    // With a probe between steps: the median over steps of (bytes a token reads / the step's
    // time) / (the probe right after it), and the median of those probes; nullopt without them.
    std::optional<double> paired_bound_ratio;
    std::optional<double> paired_probe_median_bytes_per_s;
    std::optional<double> disk_bound_ratio;
    uint64_t decode_hits = 0;
    uint64_t decode_misses = 0;
    uint64_t decode_prefetch_issued = 0;
    uint64_t decode_prefetch_used = 0;
    uint64_t decode_prefetch_wasted = 0;
    uint64_t decode_evictions = 0;
    std::optional<RankTraffic> ranks;
};

STORMO_API BenchReport make_bench_report(const BenchRun& run, const DecodeTraffic& traffic, const RamBandwidth& ram,
                                         const DiskBandwidth& disk);

// Resets this process's peak resident set size (VmHWM, which memory_plan.hpp's peak_rss_bytes
// reads) to the current RSS (Linux /proc/self/clear_refs "5"), so a probe's buffer freed before
// the model loads is not counted. False when the kernel refuses.
STORMO_API bool reset_peak_rss();

}  // namespace stormo
