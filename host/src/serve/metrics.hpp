#pragma once
// The server's counters, rendered in Prometheus' text format for GET /metrics: requests by outcome,
// tokens, speed, the expert store's hits and bytes read, the queue. Connections and the worker
// count into it from their threads.
#include <cstdint>
#include <mutex>
#include <string>

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
    size_t queue_depth = 0;
    size_t running = 0;  // requests generating now (0 or 1: one compute stream)
    bool ready = false;  // the model is loaded
};

class Metrics {
public:
    void count(Outcome outcome);
    void add_generation(const GenerationFigures& figures);
    // The expert store's counters as of the last request (the worker reads them between requests,
    // when no forward pass is changing them).
    void set_store(const ExpertStoreStats& stats);
    uint64_t requests(Outcome outcome) const;
    std::string render(const MetricsGauges& gauges) const;

private:
    mutable std::mutex mutex_;
    uint64_t requests_[std::size(kAllOutcomes)] = {};
    GenerationFigures totals_;
    ExpertStoreStats store_;
};

}  // namespace stormo::serve
