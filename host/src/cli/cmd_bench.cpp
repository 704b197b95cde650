// stormo bench: prefill and decode speed on a seeded random prompt, the expert store's figures,
// and the two bounds of this machine measured in the same run (RAM read bandwidth over the bytes a
// decode token touches; disk read bandwidth over the bytes a decode token had to read). With
// --parallel N, N sequences run together through the batch scheduler and then sequence 0 alone
// (tools/parallel_bench.hpp), between the same probes.
//
// Order matters: the RAM probe runs before the model loads (its buffer would otherwise compete
// with the weights and count in the peak RSS, which is reset after it), the disk probe after the
// generation (its reads must not warm anything the run uses).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/bench_output.hpp"
#include "cli/bench_routing.hpp"
#include "util/json_writer.hpp"
#include "cli/model_command.hpp"
#include "cli/progress.hpp"
#include "cli/speculation_json.hpp"
#include "compute/kernel_table.hpp"
#include "compute/worker_pool.hpp"
#include "distributed/ranks.hpp"
#include "tools/bandwidth.hpp"
#include "tools/bench.hpp"
#include "tools/parallel_bench.hpp"

namespace stormo::cli {
namespace {

using namespace bench;  // the output shared with --parallel's (bench_output.hpp)

using Clock = std::chrono::steady_clock;

struct BenchOptions {
    int64_t prompt_tokens = 64;
    int64_t gen_tokens = 16;
    int64_t parallel = 1;
    bool no_baseline = false;
    uint64_t seed = 0;
    bool no_warmup = false;
    std::optional<double> replay_acceptance;
    int64_t speculation_rounds = 3;
    bool json = false;
    std::string ram_probe = "1GiB";
    std::string ram_probe_after = "256MiB";
    std::string paired_probe = "64MiB";
    int ram_repeats = 5;
    std::string disk_probe = "1GiB";
    std::string disk_block = "8MiB";
    int disk_in_flight = 4;
    int disk_passes = 3;
    std::string routing;  // --routing: the store measured under replaced routes (bench_routing.hpp)
};

Expected<uint64_t> size_option(const std::string& text, const std::string& option) {
    STORMO_TRY_ASSIGN(auto s, parse_size(text, option));
    if (s.kind != SizeSpec::Kind::bytes) return fail(ErrorKind::invalid_argument, option + " must be a size in bytes");
    return s.bytes;
}

// The dense matrices held packed (BF16_PACKED): how many, their bytes in RAM and as stored.
struct PackedDense {
    size_t matrices = 0;
    uint64_t bytes = 0;
    uint64_t stored_bytes = 0;
};

PackedDense packed_dense(const Engine& engine) {
    PackedDense p;
    for (const auto& [name, bytes] : engine.packed_bytes()) {
        ++p.matrices;
        p.bytes += bytes;
        if (const TensorInfo* t = engine.source().find(name)) p.stored_bytes += t->nbytes;
    }
    return p;
}

// Plain against speculative, same prompt, same run, round by round: tokens/s, tokens per GB
// read, the drafts.
struct SpeculationSides {
    double plain_tokens_per_s = 0.0, speculative_tokens_per_s = 0.0;
    double plain_tokens_per_gb = 0.0, speculative_tokens_per_gb = 0.0;
    std::vector<double> round_speedups;  // each round's plain seconds over its speculative seconds
    double speedup = 0.0;                // their median
};

SpeculationSides speculation_sides(Engine& engine, const BenchRun& run, const SpeculativeBenchRun& spec) {
    SpeculationSides s;
    const auto per = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    const size_t rounds = spec.plain_round_seconds.size();
    double plain_seconds = 0.0;
    for (size_t i = 0; i < rounds; ++i) {
        plain_seconds += spec.plain_round_seconds[i];
        if (i < spec.speculative_round_seconds.size())
            s.round_speedups.push_back(per(spec.plain_round_seconds[i], spec.speculative_round_seconds[i]));
    }
    s.speedup = median(s.round_speedups);
    const uint64_t plain_steps = run.decode_steps * rounds;
    s.plain_tokens_per_s = per(static_cast<double>(plain_steps), plain_seconds);
    s.speculative_tokens_per_s = per(static_cast<double>(spec.decode_steps), spec.decode_seconds);
    const uint64_t spec_steps = spec.stats.verify_steps + spec.stats.plain_steps;
    s.plain_tokens_per_gb = per(static_cast<double>(plain_steps), gigabytes_read(engine, plain_steps, spec.plain_acquired));
    s.speculative_tokens_per_gb = per(static_cast<double>(spec.decode_steps), gigabytes_read(engine, spec_steps, spec.acquired));
    return s;
}

void speculation_json(JsonWriter& j, Engine& engine, const BenchRun& run, const SpeculativeBenchRun& spec) {
    const SpeculationSides sides = speculation_sides(engine, run, spec);
    j.key("speculative_run").begin_object();
    j.field("same_tokens", spec.same_tokens)
        .field("rounds", spec.plain_round_seconds.size())
        .field("decode_steps", spec.decode_steps)
        .field("decode_seconds", spec.decode_seconds)
        .field("plain_decode_tokens_per_s", sides.plain_tokens_per_s)
        .field("decode_tokens_per_s", sides.speculative_tokens_per_s)
        .field("speedup", sides.speedup)
        .field("plain_tokens_per_gb_read", sides.plain_tokens_per_gb)
        .field("tokens_per_gb_read", sides.speculative_tokens_per_gb)
        .field("expert_misses", spec.misses)
        .field("expert_bytes_read", spec.bytes_read);
    j.key("round_speedups").begin_array();
    for (double r : sides.round_speedups) j.value(r);
    j.end_array();
    j.key("plain_round_seconds").begin_array();
    for (double t : spec.plain_round_seconds) j.value(t);
    j.end_array();
    j.key("speculative_round_seconds").begin_array();
    for (double t : spec.speculative_round_seconds) j.value(t);
    j.end_array();
    optional_field(j, "replay_acceptance", spec.replay_acceptance);
    j.end_object();
    write_speculation(j, spec.stats, engine.speculation().mode, spec.decode_steps, gigabytes_read(engine, spec.stats.verify_steps + spec.stats.plain_steps, spec.acquired));
}

void speculation_rows(Engine& engine, const BenchRun& run, const SpeculativeBenchRun& spec) {
    const SpeculationSides sides = speculation_sides(engine, run, spec);
    const SpeculationStats& st = spec.stats;
    std::string source = speculate_mode_name(engine.speculation().mode);
    if (spec.replay_acceptance) source += ", drafts replayed at acceptance " + fixed(*spec.replay_acceptance, 2);
    const std::string rounds = std::to_string(sides.round_speedups.size()) + " rounds";
    row("speculative decode tokens/s", fixed(sides.speculative_tokens_per_s, 2),
        "plain " + fixed(sides.plain_tokens_per_s, 2) + " (" + rounds + ")", fixed(sides.speedup, 3) + " median of rounds");
    std::string each;
    for (double r : sides.round_speedups) each += (each.empty() ? "" : " ") + fixed(r, 3);
    row("speedup each round", each, "plain and speculative in alternating order");
    row("tokens per GB read", fixed(sides.speculative_tokens_per_gb, 2), "plain " + fixed(sides.plain_tokens_per_gb, 2));
    row("drafts accepted", std::to_string(st.accepted) + " of " + std::to_string(st.drafted), source + (spec.same_tokens ? ", same tokens" : ", TOKENS DIFFER"));
    std::string choices;
    for (const auto& [k, n] : st.gate_choices) choices += (choices.empty() ? "" : ", ") + std::string("k=") + std::to_string(k) + ": " + std::to_string(n);
    row("verify steps", std::to_string(st.verify_steps) + " + " + std::to_string(st.plain_steps) + " plain", "draft lengths chosen: " + choices);
}

void print_json(const LoadedEngine& loaded, const BenchRun& run, const DecodeTraffic& traffic, const Probes& probes,
                const BenchReport& r, double load_seconds, const BenchRouting* routing) {
    Engine& engine = *loaded.engine;
    const PackedDense packed = packed_dense(engine);
    const ExpertStoreStats& s = run.after;
    JsonWriter j;
    j.begin_object();
    engine_fields(j, loaded, s, load_seconds);
    routing_fields(j, routing);
    j.field("prompt_tokens", run.prompt_tokens)
        .field("gen_tokens", run.generated_tokens)
        .field("warmup", run.warmed_up)
        .field("decode_steps", run.decode_steps)
        .field("prefill_seconds", run.prefill_seconds)
        .field("decode_seconds", run.decode_seconds)
        .field("prefill_tokens_per_s", r.prefill_tokens_per_s)
        .field("decode_tokens_per_s", r.decode_tokens_per_s)
        .field("prefill_expert_hit_rate", r.prefill_expert_hit_rate)
        .field("expert_hit_rate", r.expert_hit_rate)
        .field("expert_hits", r.decode_hits)
        .field("expert_misses", r.decode_misses)
        .field("expert_bytes_read_per_token", r.expert_bytes_read_per_token)
        .field("read_wait_share", r.read_wait_share)
        .field("prefetch_issued", r.decode_prefetch_issued)
        .field("prefetch_used", r.decode_prefetch_used)
        .field("prefetch_wasted", r.decode_prefetch_wasted)
        .field("evictions", r.decode_evictions)
        .field("attention_seconds", run.times.attention_seconds)
        .field("moe_seconds", run.times.moe_seconds)
        .field("head_seconds", run.times.head_seconds)
        .field("decode_step_attention_seconds", r.decode_step.attention)
        .field("decode_step_ffn_seconds", r.decode_step.ffn)
        .field("decode_step_head_seconds", r.decode_step.head)
        .field("decode_step_other_seconds", r.decode_step.other)
        .field("peak_rss_bytes", run.peak_rss_bytes)
        .field("dense_resident_bytes", engine.dense_bytes())
        .field("dense_bf16", dense_bf16_name(loaded.config.dense_bf16))
        .field("dense_bf16_packed_matrices", packed.matrices)
        .field("dense_bf16_packed_bytes", packed.bytes)
        .field("dense_bf16_packed_stored_bytes", packed.stored_bytes)
        .field("expert_resident_bytes", engine.store().resident_bytes())
        .field("dense_bytes_per_token", traffic.dense_bytes)
        .field("bytes_per_expert", traffic.expert_bytes)
        .field("routed_expert_bytes_per_token", traffic.routed_bytes())
        .field("kv_bytes_per_position", traffic.kv_bytes_per_position)
        .field("mean_decode_context", r.mean_decode_context)
        .field("bytes_touched_per_token", r.bytes_touched_per_token)
        .field("head", engine.head_note())
        .field("head_bytes", traffic.head_bytes)
        .field("compact_head_bytes", run.compact_head_bytes)
        .field("head_bytes_read_per_token", r.head_bytes_read_per_token)
        .field("head_exact_rows_per_token", r.head_exact_rows_per_token)
        .field("ram_read_bytes_per_s", probes.ram().bytes_per_s)
        .field("ram_read_median_bytes_per_s", probes.ram().median_bytes_per_s)
        .field("ram_read_before_bytes_per_s", probes.ram_before.bytes_per_s);
    const RamBandwidth* after = probes.ram_after ? &*probes.ram_after : nullptr;
    optional_field(j, "ram_read_after_bytes_per_s", after ? std::optional(after->bytes_per_s) : std::nullopt);
    optional_field(j, "ram_read_after_median_bytes_per_s", after ? std::optional(after->median_bytes_per_s) : std::nullopt);
    j.field("ram_probe_after_bytes", after ? after->buffer_bytes : 0);
    optional_field(j, "paired_bound_ratio", r.paired_bound_ratio);
    optional_field(j, "paired_probe_median_bytes_per_s", r.paired_probe_median_bytes_per_s);
    j.field("ram_probe_bytes", probes.ram().buffer_bytes)
        .field("ram_probe_streams", probes.ram().streams)
        .field("ram_probe_loop", probes.ram().loop);
    optional_field(j, "disk_read_bytes_per_s", probes.disk_measured ? std::optional(probes.disk.bytes_per_s) : std::nullopt);
    optional_field(j, "disk_read_median_bytes_per_s",
                   probes.disk_measured ? std::optional(probes.disk.median_bytes_per_s) : std::nullopt);
    j.field("disk_probe_bytes", probes.disk.bytes_read)
        .field("disk_probe_passes", probes.disk.passes)
        .field("disk_probe_direct_io", probes.disk.direct_io)
        .field("disk_probe_note", probes.disk.note)
        .field("memory_bound_tokens_per_s", r.memory_bound_tokens_per_s);
    optional_field(j, "disk_bound_tokens_per_s", r.disk_bound_tokens_per_s);
    j.field("memory_bound_ratio", r.memory_bound_ratio);
    optional_field(j, "disk_bound_ratio", r.disk_bound_ratio);
    optional_field(j, "store_read_bytes_per_s", r.store_read_bytes_per_s);
    optional_field(j, "store_read_ratio", r.store_read_ratio);
    j.key("tokens").begin_array();  // the generated ids: a run under mpirun or --parallel is checked against them
    for (const int32_t id : run.tokens) j.value(id);
    j.end_array();
    if (r.ranks) {
        const RankTraffic& t = *r.ranks;
        j.key("ranks").begin_object()
            .field("ranks", current_rank_place().ranks)
            .field("bytes_sent_per_token", t.bytes_sent_per_token)
            .field("bytes_received_per_token", t.bytes_received_per_token)
            .field("messages_per_token", t.messages_per_token)
            .field("layer_exchanges_per_token", t.exchanges_per_token)
            .field("wait_seconds_per_token", t.wait_seconds_per_token)
            .field("wait_seconds_per_layer_exchange", t.wait_seconds_per_exchange)
            .field("wait_share", t.wait_share)
            .end_object();
    }
    if (run.speculative) speculation_json(j, engine, run, *run.speculative);
    j.end_object();
    std::cout << j.str() << std::endl;
}

void print_table(const LoadedEngine& loaded, const BenchRun& run, const DecodeTraffic& traffic, const Probes& probes,
                 const BenchReport& r, const BenchRouting* routing) {
    Engine& engine = *loaded.engine;
    const ExpertStoreStats& s = run.after;
    engine_header(engine, s);
    if (routing) print_routing_note(*routing);
    std::cout << "  prompt " << run.prompt_tokens << " tokens, " << run.generated_tokens << " generated ("
              << run.decode_steps << " decode steps)"
              << (run.warmed_up ? ", after a warm-up run (a prompt of the same length and one token)" : ", no warm-up run") << "\n\n";
    row("", "achieved", "bound", "achieved/bound");
    row("prefill tokens/s", fixed(r.prefill_tokens_per_s, 2));
    row("decode tokens/s", fixed(r.decode_tokens_per_s, 2), fixed(r.memory_bound_tokens_per_s, 2) + " (memory)",
        fixed(r.memory_bound_ratio, 3));
    row("", "", (r.disk_bound_tokens_per_s ? fixed(*r.disk_bound_tokens_per_s, 2) : std::string("n/a")) + " (disk)",
        r.disk_bound_ratio ? fixed(*r.disk_bound_ratio, 3) : std::string("n/a"));
    if (r.paired_bound_ratio)
        row("", "", "step by step: " + gbps(*r.paired_probe_median_bytes_per_s) + " probed between steps",
            fixed(*r.paired_bound_ratio, 3));
    row("expert hit rate (decode)", percent(r.expert_hit_rate));
    row("expert bytes read/token", bytes_text(r.expert_bytes_read_per_token));
    row("read wait share (decode)", percent(r.read_wait_share));
    if (r.store_read_bytes_per_s)
        row("store reads (decode)", gbps(*r.store_read_bytes_per_s) + " while reading",
            probes.disk_measured ? gbps(probes.disk.bytes_per_s) + " (disk probe)" : std::string("n/a"),
            r.store_read_ratio ? fixed(*r.store_read_ratio, 3) : std::string("n/a"));
    row("bytes read/token", bytes_text(static_cast<double>(r.bytes_touched_per_token)),
        "dense " + bytes_text(static_cast<double>(traffic.dense_bytes - traffic.head_bytes)) + " + head " +
            bytes_text(r.head_bytes_read_per_token) + " + experts " + bytes_text(r.routed_bytes_per_token) +
            (r.ranks ? " (held here)" : ""));
    if (const PackedDense p = packed_dense(engine); p.matrices > 0)
        row("dense BF16 packed", bytes_text(static_cast<double>(p.bytes)),
            std::to_string(p.matrices) + " matrices, " + bytes_text(static_cast<double>(p.stored_bytes)) + " as stored");
    row("head bytes read/token", bytes_text(r.head_bytes_read_per_token),
        "full head " + bytes_text(static_cast<double>(traffic.head_bytes)) + ", " + engine.head_note());
    if (run.compact_head_bytes > 0)
        row("", "", "compact copy " + bytes_text(static_cast<double>(run.compact_head_bytes)) + " + " +
                        fixed(r.head_exact_rows_per_token, 1) + " exact rows/token");
    {
        const DecodeStepTime& split = r.decode_step;
        const double step = split.attention + split.ffn + split.head + split.other;
        auto part = [step](const char* name, double seconds) {
            return std::string(name) + " " + fixed(seconds * 1e3, 2) + " ms (" + percent(step > 0 ? seconds / step : 0.0) + ")";
        };
        row("decode step time", fixed(step * 1e3, 2) + " ms",
            part("attention", split.attention) + ", " + part("FFN/experts", split.ffn));
        row("", "", part("head", split.head) + ", " + part("other", split.other));
    }
    if (r.ranks) {
        const RankTraffic& t = *r.ranks;
        row("ranks (decode)", std::to_string(current_rank_place().ranks) + " ranks",
            "sent " + bytes_text(t.bytes_sent_per_token) + "/token, received " + bytes_text(t.bytes_received_per_token) + "/token");
        row("", "", fixed(t.messages_per_token, 1) + " messages in " + fixed(t.exchanges_per_token, 1) + " layer exchanges/token");
        row("rank 0 waited (decode)", fixed(t.wait_seconds_per_token * 1e3, 2) + " ms/token",
            fixed(t.wait_seconds_per_exchange * 1e6, 1) + " us per layer exchange", percent(t.wait_share) + " of decode");
    }
    if (run.speculative) speculation_rows(engine, run, *run.speculative);
    machine_rows(probes, run.peak_rss_bytes);
    std::cout << std::flush;
}

}  // namespace

int run_bench(int argc, char** argv) {
    CommonOptions common;
    BenchOptions b;
    po::options_description d("bench options");
    d.add_options()
        ("prompt-tokens", po::value<int64_t>(&b.prompt_tokens)->value_name("N"), "random prompt length (64)")
        ("gen-tokens", po::value<int64_t>(&b.gen_tokens)->value_name("N"), "tokens to generate, at least 2 (16)")
        ("parallel", po::value<int64_t>(&b.parallel)->value_name("N"),
         "N sequences of different random prompts run together through the batch scheduler, then sequence 0 alone for the ratios and a check of its tokens (1: one sequence, the figures against the bounds)")
        ("no-baseline", po::bool_switch(&b.no_baseline), "with --parallel: no run of sequence 0 alone (no ratios, no token check)")
        ("seed", po::value<UnsignedArg>()->value_name("S")->notifier([&b](UnsignedArg v) { b.seed = v.value; }), "seed of the random prompt (0)")
        ("no-warmup", po::bool_switch(&b.no_warmup),
         "measure the first run after the load (default: a warm-up run first, a prompt of the same length and one token, as llama-bench does)")
        ("draft-replay-acceptance", po::value<double>()->value_name("P")->notifier([&b](double p) { b.replay_acceptance = p; }),
         "after the plain run, the same prompt speculating with drafts replayed from the plain run's tokens, each draft "
         "position right with probability P (seeded by --seed): speed against acceptance, the cost side only")
        ("speculation-rounds", po::value<int64_t>(&b.speculation_rounds)->value_name("N"),
         "with --speculate or --draft-replay-acceptance: rounds of a plain and a speculative decode of the prompt, "
         "in alternating order; the speedup is the median of the rounds' ratios (3)")
        ("json", po::bool_switch(&b.json), "print one JSON object")
        ("ram-probe", po::value<std::string>(&b.ram_probe)->value_name("SIZE"), "buffer of the RAM read probe (1GiB)")
        ("ram-repeats", po::value<int>(&b.ram_repeats)->value_name("N"), "rounds of the RAM probe, one pass per stream count (1, 2, 4) each; the best pass counts (5)")
        ("paired-probe", po::value<std::string>(&b.paired_probe)->value_name("SIZE"),
         "buffer of the probe pass run between every two decode steps, each step set against the pass after it (64MiB, at most --ram-probe; 0: none)")
        ("ram-probe-after", po::value<std::string>(&b.ram_probe_after)->value_name("SIZE"),
         "buffer of the RAM probe run again right after the decode, with the model resident (256MiB, at most --ram-probe; 0: not run); the bound takes the faster probe")
        ("disk-probe", po::value<std::string>(&b.disk_probe)->value_name("SIZE"),
         "expert bytes the disk probe reads (1GiB; 0 skips it)")
        ("disk-block", po::value<std::string>(&b.disk_block)->value_name("SIZE"), "one disk probe read (8MiB)")
        ("disk-in-flight", po::value<int>(&b.disk_in_flight)->value_name("N"), "disk probe reads in flight (4)")
        ("disk-passes", po::value<int>(&b.disk_passes)->value_name("N"), "passes of the disk probe, the best counts (3)")
        ("routing", po::value<std::string>(&b.routing)->value_name("SPEC"),
         "measure the expert store under replaced routes (the logits then mean nothing): trace:FILE replays a "
         "`generate --route-trace` trace mapped onto the model, synthetic[:key=value,...] generates routes calibrated to "
         "published locality figures (docs/expert_store.md)");
    common.takes_ranks = true;  // every rank of an mpirun takes part (docs/distributed.md)
    d.add(common_options(common));
    auto parsed = parse_command_line(argc, argv, "bench", "MODEL [--prompt-tokens N] [--gen-tokens N] [--parallel N] [--json]",
                                     "Measures prefill and decode speed against this machine's memory and disk bounds.",
                                     d, {"model"});
    if (!parsed) return report_usage_error("bench", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    auto usage = [](const std::string& m) { return report_usage_error("bench", Error{ErrorKind::invalid_argument, m}); };
    if (b.prompt_tokens < 1) return usage("--prompt-tokens must be >= 1");
    if (b.gen_tokens < 2) return usage("--gen-tokens must be >= 2 (the first token belongs to prefill)");
    if (b.parallel < 1) return usage("--parallel must be >= 1");
    if (b.replay_acceptance && !(*b.replay_acceptance >= 0.0 && *b.replay_acceptance <= 1.0))
        return usage("--draft-replay-acceptance must lie in [0, 1], not " + std::to_string(*b.replay_acceptance));
    if (b.replay_acceptance && b.parallel > 1) return usage("--draft-replay-acceptance runs one sequence: not with --parallel");
    if (b.speculation_rounds < 1) return usage("--speculation-rounds must be >= 1");
    if (b.ram_repeats < 1) return usage("--ram-repeats must be >= 1");
    if (b.disk_in_flight < 1) return usage("--disk-in-flight must be >= 1");
    if (b.disk_passes < 1) return usage("--disk-passes must be >= 1");
    auto ram_bytes = size_option(b.ram_probe, "--ram-probe");
    if (!ram_bytes) return report_usage_error("bench", ram_bytes.error());
    auto paired_bytes = size_option(b.paired_probe, "--paired-probe");
    if (!paired_bytes) return report_usage_error("bench", paired_bytes.error());
    auto ram_after_bytes = size_option(b.ram_probe_after, "--ram-probe-after");
    if (!ram_after_bytes) return report_usage_error("bench", ram_after_bytes.error());
    // Refused before the minutes of loading and decoding, not after them.
    for (const auto& [bytes, option] : {std::pair{*paired_bytes, "--paired-probe"}, std::pair{*ram_after_bytes, "--ram-probe-after"}})
        if (bytes > 0 && bytes < (uint64_t{1} << 20)) return usage(std::string(option) + " must be 0 or at least 1MiB");
    auto disk_bytes = size_option(b.disk_probe, "--disk-probe");
    if (!disk_bytes) return report_usage_error("bench", disk_bytes.error());
    auto disk_block = size_option(b.disk_block, "--disk-block");
    if (!disk_block) return report_usage_error("bench", disk_block.error());
    if (!common.model) return usage(kModelRequired);
    auto config = resolve_engine_config(common);
    if (!config) return report_error("bench", config.error());
    const size_t need = static_cast<size_t>(b.prompt_tokens + b.gen_tokens);
    if (context_for(*config, need) < need)
        return report_error("bench", Error{ErrorKind::invalid_argument,
                                  context_origin_for(*config, need, "--prompt-tokens and --gen-tokens") + " " + std::to_string(context_for(*config, need)) +
                                      ": --prompt-tokens + --gen-tokens need " + std::to_string(need) +
                                      " positions; give a context of at least " + std::to_string(need)});

    TerminalProgress progress;  // stderr, only on a terminal: the probes and the run take minutes on real models
    Probes probes;
    progress.note("measuring the RAM read bandwidth");
    {
        WorkerPool pool(config->threads ? static_cast<size_t>(*config->threads) : physical_core_count());
        RamProbeOptions probe;
        probe.bytes = *ram_bytes;
        probe.repeats = b.ram_repeats;
        // The loop of the kernels the engine will select (its widest loads); the registry and the
        // table live only for the probe.
        auto registry = discover_plugins(*config, common);
        if (!registry) return report_error("bench", registry.error());
        auto selection = select_kernels(*registry, detect_cpu_features(), PluginRequest{config->kernels, config->origin("kernels")});
        if (!selection) return report_error("bench", selection.error());
        const KernelTable table = build_kernel_table(*selection);
        probe.reduce = table.xor_reduce;
        probe.loop = table.xor_reduce == reference_kernels().xor_reduce ? std::string("reference") : selection->name;
        auto ram = measure_ram_read_bandwidth(pool, probe);
        if (!ram) return report_error("bench", with_context(ram.error(), "--ram-probe"));
        probes.ram_before = *ram;
    }
    if (!reset_peak_rss())
        std::cerr << "stormo: bench: cannot reset the peak RSS; it includes the RAM probe's buffer" << std::endl;

    const auto t0 = Clock::now();
    progress.clear();  // open_engine shows the load's own progress
    // The memory plan holds the KV of every sequence before it sizes the expert budget.
    auto loaded = open_engine(common, 0, need, "--prompt-tokens and --gen-tokens", static_cast<size_t>(std::max<int64_t>(1, b.parallel)));
    if (!loaded) return report_error("bench", loaded.error());
    if (loaded->served_as_rank) return 0;  // a rank > 0 under mpirun: rank 0 reports
    const double load_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    Engine& engine = *loaded->engine;
    std::optional<BenchRouting> routing;
    if (!b.routing.empty()) {
        // Every row the run routes, warm-up and baseline included (a replay cycles past them).
        const size_t rows = need * static_cast<size_t>(std::max<int64_t>(1, b.parallel)) * 3;
        auto made = make_bench_routing(b.routing, engine.model(), b.seed, rows);
        if (!made) return report_error("bench", made.error());
        routing = std::move(*made);
        engine.pipeline().override_routes(routing->routes.get());
    }

    BenchRequest request{static_cast<size_t>(b.prompt_tokens), static_cast<size_t>(b.gen_tokens), b.seed, {}, !b.no_warmup};
    request.speculation = engine.speculation();
    request.replay_acceptance = b.replay_acceptance;
    request.speculation_rounds = static_cast<size_t>(b.speculation_rounds);
    if (progress.enabled())
        request.on_progress = [&progress](const char* stage, size_t done, size_t total) { progress.update(stage, done, total); };
    // A pass of the probe's loop between every two decode steps, on the engine's own threads, so
    // each step meets the memory speed of its own moment (its buffer counts in the peak RSS).
    // The later probes run on the engine's own pool and kernel table.
    ThreadPool& pool = *engine.compute().pool;
    const XorReduceFn reduce = engine.compute().table->xor_reduce;
    std::optional<RamProbeBuffer> paired;
    // With --parallel the steps run as a batch and nothing probes between them.
    std::optional<ParallelBenchRun> batched;
    std::optional<BenchRun> single;
    if (b.parallel > 1) {
        ParallelBenchRequest batch;
        batch.sequences = static_cast<size_t>(b.parallel);
        batch.prompt_tokens = request.prompt_tokens;
        batch.gen_tokens = request.gen_tokens;
        batch.seed = b.seed;
        batch.warmup = request.warmup;
        batch.baseline = !b.no_baseline;
        batch.on_progress = request.on_progress;
        auto ran = run_parallel_bench(engine, batch);
        progress.clear();
        if (!ran) return report_error("bench", ran.error());
        batched = std::move(*ran);
    } else if (*paired_bytes > 0) {
        auto buffer = RamProbeBuffer::allocate(pool, std::min(*paired_bytes, *ram_bytes));
        if (!buffer) return report_error("bench", with_context(buffer.error(), "--paired-probe"));
        paired.emplace(std::move(*buffer));
        request.probe_between_steps = [&paired, &pool, reduce, streams = probes.ram_before.streams] {
            uint64_t checksum = 0;
            return paired->read(pool, reduce, streams, checksum);
        };
    }
    if (!batched) {
        auto ran = run_bench(engine, request);
        progress.clear();
        if (!ran) return report_error("bench", ran.error());
        single = std::move(*ran);
    }

    // The machine's memory speed drifts over minutes here (docs/benchmarks.md), so the probe runs
    // again right after the decode (Probes::ram takes the faster); the run's peak RSS was taken
    // before this buffer existed.
    if (*ram_after_bytes > 0) {
        progress.note("measuring the RAM read bandwidth again");
        RamProbeOptions probe;
        probe.bytes = std::min(*ram_after_bytes, *ram_bytes);
        probe.repeats = b.ram_repeats;
        probe.reduce = reduce;
        probe.loop = probes.ram_before.loop;  // the same table's loop as before the load
        auto ram = measure_ram_read_bandwidth(pool, probe);
        progress.clear();
        if (!ram) return report_error("bench", with_context(ram.error(), "--ram-probe-after"));
        probes.ram_after = *ram;
    }

    auto family = engine_family(engine);
    if (!family) return report_error("bench", family.error());
    auto traffic = decode_traffic(engine.source(), **family, engine.packed_bytes());
    if (!traffic) return report_error("bench", traffic.error());
    auto expert_ranges = expert_file_ranges(engine.source(), **family);
    if (!expert_ranges) return report_error("bench", expert_ranges.error());
    const std::vector<FileRange>& ranges = *expert_ranges;
    if (*disk_bytes > 0 && !ranges.empty()) {
        DiskReadOptions o;
        o.bytes = *disk_bytes;
        o.block = *disk_block;
        o.in_flight = static_cast<size_t>(b.disk_in_flight);
        o.direct_io = loaded->config.direct_io;
        o.seed = b.seed;
        o.passes = b.disk_passes;
        progress.note("measuring the disk read bandwidth");
        auto disk = measure_disk_read_bandwidth(ranges, o);
        progress.clear();
        if (!disk) return report_error("bench", with_context(disk.error(), "--disk-probe"));
        probes.disk = *disk;
        probes.disk_measured = true;
        probes.disk_block = o.block;
        probes.disk_in_flight = o.in_flight;
    }

    if (batched) {
        const ParallelBenchReport report = make_parallel_bench_report(*batched, *traffic);
        if (b.json) print_parallel_json(*loaded, *batched, *traffic, probes, report, load_seconds, routing ? &*routing : nullptr);
        else print_parallel_table(*loaded, *batched, *traffic, probes, report, routing ? &*routing : nullptr);
        // A batched sequence that is not the bits it is alone is a correctness failure, not a figure.
        size_t where = 0;
        if (parallel_tokens_match(*batched, &where) == false)
            return report_error("bench", Error{ErrorKind::internal,
                                      "bench: sequence 0's tokens in the batch of " + std::to_string(batched->sequences) +
                                          " differ from its tokens alone from token " + std::to_string(where)});
        return 0;
    }
    const BenchReport report = make_bench_report(*single, *traffic, probes.ram(), probes.disk);
    if (b.json) print_json(*loaded, *single, *traffic, probes, report, load_seconds, routing ? &*routing : nullptr);
    else print_table(*loaded, *single, *traffic, probes, report, routing ? &*routing : nullptr);
    return 0;
}

}  // namespace stormo::cli
