// The table and the JSON of `stormo bench --parallel N`: the batch's figures, sequence 0 alone's
// beside them and their ratios, and whether sequence 0's tokens were the same.
#include <functional>
#include <iostream>
#include <optional>
#include <string>

#include "cli/bench_output.hpp"
#include "cli/bench_routing.hpp"

namespace stormo::cli::bench {
namespace {

std::string times_text(const std::optional<double>& v) { return v ? fixed(*v, 2) + "x" : std::string("n/a"); }
std::string alone_text(const std::optional<double>& v, const std::function<std::string(double)>& format) {
    return v ? format(*v) : std::string("n/a");
}
std::string ms(double seconds) { return fixed(seconds * 1e3, 1) + " ms"; }

std::string tokens_text(const ParallelBenchRun& run) {
    size_t where = 0;
    const std::optional<bool> same = parallel_tokens_match(run, &where);
    if (!same) return "not checked (--no-baseline)";
    return *same ? "identical to alone" : "DIFFERENT from alone from token " + std::to_string(where);
}

// The bounds of a batched decode step: RAM reads the dense part once and each expert of the
// step's union once for the N tokens of the step; the disk reads what the store missed.
double memory_bound_tokens_per_s(const ParallelBenchRun& run, const DecodeTraffic& traffic, const Probes& probes,
                                 const ParallelBenchReport& r) {
    const double step_bytes = static_cast<double>(traffic.dense_bytes) +
                              r.distinct_experts_per_layer * traffic.moe_layers * static_cast<double>(traffic.expert_bytes);
    return step_bytes > 0.0 ? probes.ram().bytes_per_s * static_cast<double>(run.sequences) / step_bytes : 0.0;
}
std::optional<double> disk_bound_tokens_per_s(const Probes& probes, const ParallelBenchReport& r) {
    if (!probes.disk_measured || r.expert_bytes_read_per_token <= 0.0 || probes.disk.bytes_per_s <= 0.0) return std::nullopt;
    return probes.disk.bytes_per_s / r.expert_bytes_read_per_token;
}
double hit_rate(const StoreTraffic& s) {
    const double asked = static_cast<double>(s.hits + s.misses);
    return asked > 0.0 ? static_cast<double>(s.hits) / asked : 1.0;
}

void number_array(JsonWriter& j, const char* key, const std::vector<double>& values) {
    j.key(key).begin_array();
    for (double v : values) j.value(v);
    j.end_array();
}

}  // namespace

void print_parallel_table(const LoadedEngine& loaded, const ParallelBenchRun& run, const DecodeTraffic& traffic,
                          const Probes& probes, const ParallelBenchReport& r, const BenchRouting* routing) {
    engine_header(*loaded.engine, run.after);
    if (routing) print_routing_note(*routing);
    std::cout << "  " << run.sequences << " sequences, each a prompt of " << run.prompt_tokens
              << " random tokens (its own) and " << run.gen_tokens
              << " generated, arriving at once and run together (at most " << run.step_rows << " rows a step); "
              << run.decode_steps << " decode steps (" << run.full_decode_steps << " with every sequence)\n"
              << "  " << (run.alone ? "then sequence 0 alone (the same prompt and tokens)" : "no run alone (--no-baseline)")
              << (run.warmed_up ? ", after a warm-up batch (other prompts of the same length, one token each)"
                                : ", no warm-up run")
              << "\n\n";
    const bool alone = run.alone.has_value();
    const std::string batched = "batched (" + std::to_string(run.sequences) + ")";
    row("", batched, "alone", alone ? "batched/alone" : "");
    const auto rate = [](double v) { return fixed(v, 2); };
    row("prefill tokens/s", rate(r.prefill_tokens_per_s), alone_text(r.alone_prefill_tokens_per_s, rate));
    row("decode tokens/s", rate(r.aggregate_decode_tokens_per_s), alone_text(r.alone_decode_tokens_per_s, rate),
        alone ? times_text(r.decode_speedup) : "");
    const std::optional<double> disk_bound = disk_bound_tokens_per_s(probes, r);
    row("  bound: memory, disk", fixed(memory_bound_tokens_per_s(run, traffic, probes, r), 2) + ", " +
                                     (disk_bound ? fixed(*disk_bound, 2) : std::string("n/a")));
    row("decode tokens/s/sequence", rate(r.sequence_decode_tokens_per_s_mean), alone_text(r.alone_decode_tokens_per_s, rate),
        "slowest " + rate(r.sequence_decode_tokens_per_s_min));
    row("time to first token", ms(r.first_token_seconds_mean), alone_text(r.alone_first_token_seconds, ms),
        alone ? "slowest " + ms(r.first_token_seconds_max) + ": " + times_text(r.first_token_ratio) : "");
    row("time to last token", ms(r.last_token_seconds_mean), alone_text(r.alone_last_token_seconds, ms),
        alone ? "slowest " + ms(r.last_token_seconds_max) + ": " + times_text(r.last_token_ratio) : "");
    row("expert bytes read/token", bytes_text(r.expert_bytes_read_per_token),
        alone_text(r.alone_expert_bytes_read_per_token, bytes_text),
        alone ? times_text(r.expert_bytes_per_token_ratio) : "");
    row("expert reads/token", fixed(r.expert_reads_per_token, 2),
        alone_text(r.alone_expert_reads_per_token, [](double v) { return fixed(v, 2); }));
    // The store's counters over the decode steps: the batch's summed, alone's from its first token.
    const auto reads = [](uint64_t misses, uint64_t prefetched) {
        return std::to_string(misses) + ", " + std::to_string(prefetched);
    };
    const ExpertStoreStats* a = alone ? &run.alone->after_prefill : nullptr;
    const ExpertStoreStats* z = alone ? &run.alone->after : nullptr;
    row("expert bytes read (decode)", format_bytes(run.decode_store.bytes_read),
        alone ? format_bytes(z->bytes_read - a->bytes_read) : std::string("n/a"));
    row("  misses, prefetches", reads(run.decode_store.misses, run.decode_store.prefetch_issued),
        alone ? reads(z->misses - a->misses, z->prefetch_issued - a->prefetch_issued) : std::string("n/a"));
    row("distinct experts/layer", fixed(r.distinct_experts_per_layer, 2), std::to_string(traffic.top_k) + " (top_k)",
        "N x top_k = " + std::to_string(r.rows_times_top_k) + ", of " + std::to_string(traffic.n_experts) + " experts");
    row("KV cache", format_bytes(run.kv_bytes),
        alone ? format_bytes(run.alone->kv_bytes) + " (one session)" : std::string("n/a"));
    row("tokens", tokens_text(run));
    machine_rows(probes, run.peak_rss_bytes);
    std::cout << std::flush;
}

void print_parallel_json(const LoadedEngine& loaded, const ParallelBenchRun& run, const DecodeTraffic& traffic,
                         const Probes& probes, const ParallelBenchReport& r, double load_seconds, const BenchRouting* routing) {
    JsonWriter j;
    j.begin_object();
    engine_fields(j, loaded, run.after, load_seconds);
    routing_fields(j, routing);
    j.field("parallel", run.sequences)
        .field("prompt_tokens", run.prompt_tokens)
        .field("gen_tokens", run.gen_tokens)
        .field("step_rows", run.step_rows)
        .field("warmup", run.warmed_up)
        .field("baseline", run.alone.has_value())
        .field("steps", run.steps)
        .field("decode_steps", run.decode_steps)
        .field("full_decode_steps", run.full_decode_steps)
        .field("generated_tokens", r.generated_tokens)
        .field("decode_tokens", run.decode_tokens)
        .field("batch_seconds", run.seconds)
        .field("decode_seconds", run.decode_seconds)
        .field("prefill_tokens_per_s", r.prefill_tokens_per_s)
        .field("decode_tokens_per_s", r.aggregate_decode_tokens_per_s)  // the aggregate, as the contract says
        .field("aggregate_decode_tokens_per_s", r.aggregate_decode_tokens_per_s)
        .field("expert_hit_rate", hit_rate(run.decode_store))
        .field("memory_bound_tokens_per_s", memory_bound_tokens_per_s(run, traffic, probes, r))
        .field("sequence_decode_tokens_per_s_mean", r.sequence_decode_tokens_per_s_mean)
        .field("sequence_decode_tokens_per_s_min", r.sequence_decode_tokens_per_s_min)
        .field("first_token_seconds_mean", r.first_token_seconds_mean)
        .field("first_token_seconds_max", r.first_token_seconds_max)
        .field("last_token_seconds_mean", r.last_token_seconds_mean)
        .field("last_token_seconds_max", r.last_token_seconds_max);
    number_array(j, "first_token_seconds", run.first_token_seconds);
    number_array(j, "last_token_seconds", run.last_token_seconds);
    number_array(j, "sequence_decode_seconds", run.sequence_decode_seconds);
    j.field("expert_hits", run.decode_store.hits)
        .field("expert_misses", run.decode_store.misses)
        .field("prefetch_issued", run.decode_store.prefetch_issued)
        .field("expert_bytes_read", run.decode_store.bytes_read)
        .field("expert_bytes_read_total", run.after.bytes_read - run.before.bytes_read)
        .field("read_wait_seconds", run.decode_store.read_wait_seconds)
        .field("expert_bytes_read_per_token", r.expert_bytes_read_per_token)
        .field("expert_reads_per_token", r.expert_reads_per_token)
        .field("distinct_experts_per_layer", r.distinct_experts_per_layer)
        .field("top_k", traffic.top_k)
        .field("n_experts", traffic.n_experts)
        .field("rows_times_top_k", r.rows_times_top_k)
        .field("kv_bytes", run.kv_bytes);
    j.key("alone_kv_bytes");
    if (run.alone) j.value(run.alone->kv_bytes);
    else j.null();
    optional_field(j, "disk_bound_tokens_per_s", disk_bound_tokens_per_s(probes, r));
    optional_field(j, "alone_prefill_tokens_per_s", r.alone_prefill_tokens_per_s);
    optional_field(j, "alone_decode_tokens_per_s", r.alone_decode_tokens_per_s);
    optional_field(j, "alone_first_token_seconds", r.alone_first_token_seconds);
    optional_field(j, "alone_expert_bytes_read_per_token", r.alone_expert_bytes_read_per_token);
    optional_field(j, "alone_expert_reads_per_token", r.alone_expert_reads_per_token);
    optional_field(j, "decode_speedup", r.decode_speedup);
    optional_field(j, "expert_bytes_per_token_ratio", r.expert_bytes_per_token_ratio);
    optional_field(j, "first_token_ratio", r.first_token_ratio);
    optional_field(j, "alone_last_token_seconds", r.alone_last_token_seconds);
    optional_field(j, "last_token_ratio", r.last_token_ratio);
    j.key("tokens_identical_to_alone");
    if (const std::optional<bool> same = parallel_tokens_match(run)) j.value(*same);
    else j.null();
    j.field("peak_rss_bytes", run.peak_rss_bytes)
        .field("ram_read_bytes_per_s", probes.ram().bytes_per_s);
    optional_field(j, "disk_read_bytes_per_s", probes.disk_measured ? std::optional(probes.disk.bytes_per_s) : std::nullopt);
    j.end_object();
    std::cout << j.str() << std::endl;
}

}  // namespace stormo::cli::bench
