#pragma once
// The server's counters, rendered in Prometheus' text format for GET /metrics: requests by outcome,
// tokens, speed, the expert store's hits and bytes read, the batches, the queue and the KV.
// Connections and the worker count into it from their threads.
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/batch_scheduler.hpp"
#include "runtime/prompt_cache.hpp"
#include "runtime/speculation.hpp"
#include "store/expert_store.hpp"

namespace stormo::serve {

enum class Outcome { ok, cancelled, client_error, unauthorized, rejected, failed };
inline constexpr Outcome kAllOutcomes[] = {Outcome::ok,           Outcome::cancelled, Outcome::client_error,
                                           Outcome::unauthorized, Outcome::rejected,  Outcome::failed};
const char* outcome_name(Outcome outcome);  // the label value: "ok", "cancelled", ...

struct GenerationFigures {
    size_t prompt_tokens = 0;
    size_t reused_tokens = 0;  // prompt positions whose KV the session already held
    size_t generated_tokens = 0;
    double prefill_seconds = 0.0;
    double decode_seconds = 0.0;
};

// What the gauges show at the moment of the scrape.
struct MetricsGauges {
    size_t queue_depth = 0;  // requests waiting for a slot
    size_t running = 0;      // sequences in the batch now (at most `slots`)
    size_t slots = 0;        // --parallel
    uint64_t kv_bytes_in_use = 0;    // the KV of the positions every slot's session holds
    uint64_t kv_bytes_reserved = 0;  // the KV the memory plan reserved for the slots
    bool ready = false;      // the model is loaded
};

class Metrics {
public:
    void count(Outcome outcome);
    void add_generation(const GenerationFigures& figures);
    // The expert store's counters as of the last request (the worker reads them between steps,
    // when no forward pass is changing them).
    void set_store(const ExpertStoreStats& stats);
    // One batched step: its rows and sequences, the tokens it generated, the store's counters after it.
    void add_step(const BatchStep& step, size_t generated, const ExpertStoreStats& stats);
    // A request's slot took `positions` of its prompt's KV from another slot's pages.
    void add_shared_prefix(size_t positions);
    // The prompt cache's counters now (the worker sets them after it used the cache).
    void set_cache(const PromptCacheStats& stats);
    // A finished generation's speculation (drafted, accepted by source, verify and plain steps).
    void add_speculation(const SpeculationStats& stats);
    // What one step reads besides experts (the dense weights) and one expert's bytes: the scale
    // of tokens per GB read.
    void set_read_sizes(uint64_t dense_bytes, double expert_bytes);
    uint64_t requests(Outcome outcome) const;
    std::string render(const MetricsGauges& gauges) const;

private:
    mutable std::mutex mutex_;
    uint64_t requests_[std::size(kAllOutcomes)] = {};
    GenerationFigures totals_;
    ExpertStoreStats store_;
    struct StepTotals {
        uint64_t steps = 0;
        uint64_t sequences = 0;
        uint64_t decode_rows = 0;
        uint64_t prompt_rows = 0;
        uint64_t isolated = 0;
        uint64_t generated = 0;  // tokens the steps generated (finished requests or not)
    } steps_;
    std::optional<PromptCacheStats> cache_;  // none: no --cache-dir
    uint64_t shared_prefixes_ = 0;
    uint64_t shared_positions_ = 0;
    SpeculationStats speculation_;
    uint64_t dense_bytes_ = 0;
    double expert_bytes_ = 0.0;
};

}  // namespace stormo::serve
