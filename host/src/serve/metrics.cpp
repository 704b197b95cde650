#include "serve/metrics.hpp"

#include <cstdio>
#include <sstream>

namespace stormo::serve {

const char* outcome_name(Outcome outcome) {
    switch (outcome) {
        case Outcome::ok: return "ok";
        case Outcome::cancelled: return "cancelled";
        case Outcome::client_error: return "client_error";
        case Outcome::unauthorized: return "unauthorized";
        case Outcome::rejected: return "rejected";
        case Outcome::failed: return "failed";
    }
    return "failed";
}

void Metrics::count(Outcome outcome) {
    std::lock_guard lock(mutex_);
    ++requests_[static_cast<size_t>(outcome)];
}

void Metrics::add_generation(const GenerationFigures& f) {
    std::lock_guard lock(mutex_);
    totals_.prompt_tokens += f.prompt_tokens;
    totals_.reused_tokens += f.reused_tokens;
    totals_.generated_tokens += f.generated_tokens;
    totals_.prefill_seconds += f.prefill_seconds;
    totals_.decode_seconds += f.decode_seconds;
}

void Metrics::set_store(const ExpertStoreStats& stats) {
    std::lock_guard lock(mutex_);
    store_ = stats;
}

void Metrics::add_step(const BatchStep& step, size_t generated, const ExpertStoreStats& stats) {
    std::lock_guard lock(mutex_);
    ++steps_.steps;
    steps_.sequences += step.sequences;
    steps_.decode_rows += step.decode_rows;
    steps_.prompt_rows += step.prompt_rows;
    steps_.isolated += step.isolated ? 1 : 0;
    steps_.generated += generated;
    store_ = stats;
}

void Metrics::add_shared_prefix(size_t positions) {
    std::lock_guard lock(mutex_);
    ++shared_prefixes_;
    shared_positions_ += positions;
}

void Metrics::set_cache(const PromptCacheStats& stats) {
    std::lock_guard lock(mutex_);
    cache_ = stats;
}

uint64_t Metrics::requests(Outcome outcome) const {
    std::lock_guard lock(mutex_);
    return requests_[static_cast<size_t>(outcome)];
}

namespace {

// A number as Prometheus reads it: integers exactly, others with enough digits.
std::string number(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

void family(std::ostringstream& out, const char* name, const char* type, const char* help) {
    out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

void sample(std::ostringstream& out, const char* name, double value) { out << name << " " << number(value) << "\n"; }

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

void render_cache(std::ostringstream& out, const PromptCacheStats& c) {
    auto counter = [&](const char* name, const char* help, uint64_t v) {
        family(out, name, "counter", help);
        sample(out, name, static_cast<double>(v));
    };
    auto gauge = [&](const char* name, const char* help, uint64_t v) {
        family(out, name, "gauge", help);
        sample(out, name, static_cast<double>(v));
    };
    counter("stormo_prompt_cache_lookups_total", "Requests that looked for their prompt's prefix in the prompt cache.", c.lookups);
    family(out, "stormo_prompt_cache_block_hits_total", "counter", "Prompt cache blocks restored, by where they were found.");
    out << "stormo_prompt_cache_block_hits_total{tier=\"memory\"} " << c.memory_hits << "\n";
    out << "stormo_prompt_cache_block_hits_total{tier=\"disk\"} " << c.disk_hits << "\n";
    counter("stormo_prompt_cache_positions_restored_total", "Prompt positions restored from the prompt cache instead of computed.",
            c.positions_restored);
    counter("stormo_prompt_cache_blocks_written_total", "Prompt cache blocks written to the disk.", c.blocks_written);
    counter("stormo_prompt_cache_blocks_evicted_total", "Prompt cache blocks evicted (least recently used) to fit --cache-size.",
            c.blocks_evicted);
    counter("stormo_prompt_cache_blocks_dropped_total",
            "Prompt cache blocks that failed a check (corrupted, truncated, foreign), deleted and computed again.", c.blocks_dropped);
    counter("stormo_prompt_cache_write_errors_total", "Prompt cache blocks that could not be written (a full disk, no permission).",
            c.write_errors);
    gauge("stormo_prompt_cache_disk_bytes", "Bytes of prompt cache blocks on the disk.", c.disk_bytes);
    gauge("stormo_prompt_cache_disk_blocks", "Prompt cache blocks on the disk.", c.disk_blocks);
    gauge("stormo_prompt_cache_memory_bytes", "Bytes of prompt cache blocks kept in memory (--cache-memory).", c.memory_bytes);
}

}  // namespace

void Metrics::add_speculation(const SpeculationStats& stats) {
    std::lock_guard lock(mutex_);
    speculation_.add(stats);
}

void Metrics::set_read_sizes(uint64_t dense_bytes, double expert_bytes) {
    std::lock_guard lock(mutex_);
    dense_bytes_ = dense_bytes;
    expert_bytes_ = expert_bytes;
}

std::string Metrics::render(const MetricsGauges& gauges) const {
    std::lock_guard lock(mutex_);
    std::ostringstream out;
    family(out, "stormo_requests_total", "counter", "Generation and API requests answered, by outcome.");
    for (Outcome o : kAllOutcomes)
        out << "stormo_requests_total{outcome=\"" << outcome_name(o) << "\"} " << requests_[static_cast<size_t>(o)] << "\n";
    family(out, "stormo_prompt_tokens_total", "counter", "Prompt tokens of finished generations, reused ones included.");
    sample(out, "stormo_prompt_tokens_total", static_cast<double>(totals_.prompt_tokens));
    family(out, "stormo_prompt_tokens_reused_total", "counter", "Prompt tokens whose KV the session already held.");
    sample(out, "stormo_prompt_tokens_reused_total", static_cast<double>(totals_.reused_tokens));
    family(out, "stormo_generated_tokens_total", "counter", "Tokens generated.");
    sample(out, "stormo_generated_tokens_total", static_cast<double>(totals_.generated_tokens));
    family(out, "stormo_prefill_seconds_total", "counter", "Time spent computing prompts.");
    sample(out, "stormo_prefill_seconds_total", totals_.prefill_seconds);
    family(out, "stormo_decode_seconds_total", "counter", "Time spent generating tokens.");
    sample(out, "stormo_decode_seconds_total", totals_.decode_seconds);
    family(out, "stormo_prefill_tokens_per_second", "gauge", "Prompt tokens computed per second of a request's prompt time, over all requests.");
    sample(out, "stormo_prefill_tokens_per_second",
           ratio(static_cast<double>(totals_.prompt_tokens - totals_.reused_tokens), totals_.prefill_seconds));
    family(out, "stormo_decode_tokens_per_second", "gauge", "Tokens generated per second of a request's decode time, over all requests (a request's own speed: requests batched together overlap, so the server's rate is higher).");
    sample(out, "stormo_decode_tokens_per_second", ratio(static_cast<double>(totals_.generated_tokens), totals_.decode_seconds));
    family(out, "stormo_expert_hits_total", "counter", "Experts acquired already in a RAM slot.");
    sample(out, "stormo_expert_hits_total", static_cast<double>(store_.hits));
    family(out, "stormo_expert_misses_total", "counter", "Experts read from disk on demand.");
    sample(out, "stormo_expert_misses_total", static_cast<double>(store_.misses));
    family(out, "stormo_expert_hit_rate", "gauge", "Hits over acquisitions (1 when every expert is resident).");
    const double acquired = static_cast<double>(store_.hits + store_.misses);
    sample(out, "stormo_expert_hit_rate", acquired > 0 ? static_cast<double>(store_.hits) / acquired : 1.0);
    family(out, "stormo_expert_bytes_read_total", "counter", "Bytes of experts read from disk (misses and prefetches).");
    sample(out, "stormo_expert_bytes_read_total", static_cast<double>(store_.bytes_read));
    const double generated = static_cast<double>(steps_.generated);
    family(out, "stormo_expert_reads_per_token", "gauge",
           "Experts acquired (each once a step for every row that chose it, prompts included) per token generated.");
    sample(out, "stormo_expert_reads_per_token", ratio(acquired, generated));
    family(out, "stormo_expert_bytes_read_per_token", "gauge", "Bytes of experts read from disk per token generated.");
    sample(out, "stormo_expert_bytes_read_per_token", ratio(static_cast<double>(store_.bytes_read), generated));
    family(out, "stormo_batch_steps_total", "counter", "Forward steps run (each over every running sequence).");
    sample(out, "stormo_batch_steps_total", static_cast<double>(steps_.steps));
    family(out, "stormo_batch_sequences_total", "counter", "Sequences over all steps (divided by the steps: the mean batch).");
    sample(out, "stormo_batch_sequences_total", static_cast<double>(steps_.sequences));
    family(out, "stormo_batch_rows_total", "counter", "Rows over all steps: a decode row per sequence past its prompt, prompt chunks.");
    out << "stormo_batch_rows_total{kind=\"decode\"} " << steps_.decode_rows << "\n";
    out << "stormo_batch_rows_total{kind=\"prompt\"} " << steps_.prompt_rows << "\n";
    family(out, "stormo_batch_isolated_steps_total", "counter", "Steps that failed batched and ran each sequence alone.");
    sample(out, "stormo_batch_isolated_steps_total", static_cast<double>(steps_.isolated));
    family(out, "stormo_shared_prefix_requests_total", "counter",
           "Requests whose slot took its prompt's prefix KV from another slot's pages.");
    sample(out, "stormo_shared_prefix_requests_total", static_cast<double>(shared_prefixes_));
    family(out, "stormo_shared_prefix_positions_total", "counter", "Prompt positions those requests did not compute.");
    sample(out, "stormo_shared_prefix_positions_total", static_cast<double>(shared_positions_));
    const SpeculationStats& spec = speculation_;
    family(out, "stormo_speculation_drafted_total", "counter", "Draft tokens verified (finished requests), by draft source.");
    for (const auto& [name, by] : spec.by_source) out << "stormo_speculation_drafted_total{source=\"" << name << "\"} " << by.drafted << "\n";
    family(out, "stormo_speculation_accepted_total", "counter", "Of those, the drafts kept, by draft source.");
    for (const auto& [name, by] : spec.by_source) out << "stormo_speculation_accepted_total{source=\"" << name << "\"} " << by.accepted << "\n";
    family(out, "stormo_speculation_acceptance", "gauge", "Drafts kept over drafts verified, every source.");
    sample(out, "stormo_speculation_acceptance", spec.acceptance());
    family(out, "stormo_speculation_verify_steps_total", "counter", "Decode steps that carried drafts.");
    sample(out, "stormo_speculation_verify_steps_total", static_cast<double>(spec.verify_steps));
    family(out, "stormo_speculation_verify_seconds_total", "counter", "The forward time of those steps (a batched step's whole time).");
    sample(out, "stormo_speculation_verify_seconds_total", spec.verify_seconds);
    family(out, "stormo_speculation_plain_steps_total", "counter", "Decode steps without drafts (every request's, speculating or not).");
    sample(out, "stormo_speculation_plain_steps_total", static_cast<double>(spec.plain_steps));
    family(out, "stormo_speculation_plain_seconds_total", "counter", "The forward time of those steps.");
    sample(out, "stormo_speculation_plain_seconds_total", spec.plain_seconds);
    family(out, "stormo_tokens_per_gb_read", "gauge",
           "Tokens generated per GB the steps read: the dense weights once a step and each acquired expert once.");
    const double gigabytes = (static_cast<double>(dense_bytes_) * static_cast<double>(steps_.steps) + expert_bytes_ * acquired) / 1e9;
    sample(out, "stormo_tokens_per_gb_read", ratio(generated, gigabytes));
    if (cache_) render_cache(out, *cache_);
    family(out, "stormo_queue_depth", "gauge", "Requests waiting for a slot.");
    sample(out, "stormo_queue_depth", static_cast<double>(gauges.queue_depth));
    family(out, "stormo_requests_running", "gauge", "Sequences generating now (at most stormo_slots).");
    sample(out, "stormo_requests_running", static_cast<double>(gauges.running));
    family(out, "stormo_slots", "gauge", "Sequences the server runs at once (--parallel).");
    sample(out, "stormo_slots", static_cast<double>(gauges.slots));
    family(out, "stormo_kv_bytes_in_use", "gauge", "KV cache of the positions the slots' sessions hold.");
    sample(out, "stormo_kv_bytes_in_use", static_cast<double>(gauges.kv_bytes_in_use));
    family(out, "stormo_kv_bytes_reserved", "gauge", "KV cache the memory plan reserved for the slots.");
    sample(out, "stormo_kv_bytes_reserved", static_cast<double>(gauges.kv_bytes_reserved));
    family(out, "stormo_model_ready", "gauge", "1 once the model is loaded.");
    sample(out, "stormo_model_ready", gauges.ready ? 1.0 : 0.0);
    return out.str();
}

}  // namespace stormo::serve
