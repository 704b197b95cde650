#include "tools/bench.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/generation.hpp"
#include "runtime/memory_plan.hpp"
#include "runtime/replay_draft_source.hpp"
#include "runtime/sequence_generation.hpp"
#include "runtime/speculation_gate.hpp"

namespace stormo {
namespace {

uint64_t sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

double ratio(double num, double den) { return den > 0.0 ? num / den : 0.0; }

}  // namespace

uint64_t DecodeTraffic::bytes_per_token(double context) const {
    const double kv = static_cast<double>(kv_bytes_per_position) * std::max(context, 0.0);
    return dense_bytes + routed_bytes() + static_cast<uint64_t>(kv);
}

Expected<DecodeTraffic> decode_traffic(const ModelSource& source, const Family& family, const HeldBytes& held_bytes) {
    STORMO_TRY_ASSIGN(auto summary, family.summarize(source.config()));
    DecodeTraffic t;
    t.moe_layers = summary.n_moe_layers;
    t.n_experts = summary.n_experts;
    t.top_k = summary.top_k;
    t.kv_bytes_per_position = static_cast<uint64_t>(summary.kv_floats_per_token) * sizeof(float);
    uint64_t embedding = 0, experts = 0, head = 0, dense = 0;
    bool has_head = false;
    for (const TensorInfo& info : source.tensors()) {
        const auto held = held_bytes.find(info.name);
        const uint64_t nbytes = held != held_bytes.end() ? held->second : info.nbytes;
        switch (tensor_role(family, summary, info.name)) {
            case TensorRole::embedding:
                embedding += nbytes;
                if (!info.shape.empty() && info.shape[0] > 0)
                    t.embedding_row_bytes += nbytes / static_cast<uint64_t>(info.shape[0]);
                break;
            case TensorRole::experts: experts += nbytes; break;
            case TensorRole::head:
                head += nbytes;
                has_head = true;
                if (!info.shape.empty()) t.head_rows += static_cast<uint64_t>(std::max<int64_t>(info.shape[0], 0));
                break;
            case TensorRole::draft: break;  // drafting layers: not loaded, never read
            default: dense += nbytes; break;  // attention, norms, router, dense FFN, other
        }
    }
    // A tied head reads the whole embedding matrix; an untied one reads its own, plus one row of
    // the embedding for the token.
    t.dense_bytes = dense + t.embedding_row_bytes + (has_head ? head : embedding);
    t.head_bytes = has_head ? head : embedding;
    if (!has_head && t.embedding_row_bytes > 0) t.head_rows = embedding / t.embedding_row_bytes;
    const uint64_t expert_count = static_cast<uint64_t>(std::max(t.moe_layers, 0)) * std::max(t.n_experts, 0);
    if (expert_count > 0) t.expert_bytes = experts / expert_count;
    if (expert_count == 0 && experts > 0)
        return fail(ErrorKind::mismatch, source.directory() + ": the checkpoint holds expert tensors but " +
                                             "the family reports no MoE layer");
    return t;
}

Expected<std::vector<FileRange>> expert_file_ranges(const ModelSource& source, const Family& family) {
    STORMO_TRY_ASSIGN(const ModelSummary summary, family.summarize(source.config()));
    std::vector<FileRange> ranges;
    for (const TensorInfo& info : source.tensors())
        if (tensor_role(family, summary, info.name) == TensorRole::experts)
            ranges.push_back({info.file, info.offset, info.nbytes});
    return ranges;
}

Expected<const Family*> engine_family(const Engine& engine) {
    const LoadedPlugin* plugin = engine.registry().find(engine.family_name());
    if (plugin == nullptr || !plugin->family)
        return fail(ErrorKind::internal, "the engine's family plugin \"" + engine.family_name() + "\" is not in its registry");
    return static_cast<const Family*>(plugin->family.get());
}

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

std::vector<int32_t> draw_prompt(std::mt19937_64& rng, size_t vocab, size_t n) {
    std::uniform_int_distribution<int64_t> pick(0, static_cast<int64_t>(vocab) - 1);
    std::vector<int32_t> prompt(n);
    for (int32_t& id : prompt) id = static_cast<int32_t>(pick(rng));
    return prompt;
}

namespace {

// One decode of the plain run's prompt in a session of its own, speculating or not; the store's
// counters split its prefill from its decode at the first token, as the plain run's do.
struct DecodeRound {
    double seconds = 0.0;
    size_t steps = 0;
    bool same_tokens = false;
    SpeculationStats stats;
    uint64_t acquired = 0, misses = 0, bytes_read = 0;
};

Expected<DecodeRound> run_round(Engine& engine, const GenerationRequest& plain, const BenchRequest& request,
                                const std::vector<int32_t>& plain_tokens, bool speculating,
                                const std::shared_ptr<SpeculationMemory>& memory) {
    GenerationRequest gen = plain;
    gen.on_prefill_block = nullptr;
    if (speculating) {
        gen.speculation = request.speculation;
        gen.speculation_memory = memory;
        if (gen.speculation.mode == SpeculateMode::off) gen.speculation.mode = SpeculateMode::context;
        if (request.replay_acceptance)
            gen.draft_source = std::make_shared<ReplayDraftSource>(plain_tokens, *request.replay_acceptance, request.seed,
                                                                   engine.model().vocab_size());
    }
    STORMO_TRY_ASSIGN(auto session, engine.new_session(request.prompt_tokens + request.gen_tokens));
    ExpertStoreStats at_first{};
    bool first = true;
    auto on_token = [&](int32_t) {
        if (first) at_first = engine.store().stats();
        first = false;
    };
    STORMO_TRY_ASSIGN(auto result, generate(engine.pipeline(), *session, gen, on_token));
    const ExpertStoreStats after = engine.store().stats();
    DecodeRound out;
    out.steps = result.tokens.empty() ? 0 : result.tokens.size() - 1;
    out.seconds = result.decode_seconds;
    out.same_tokens = result.tokens == plain_tokens;
    out.stats = result.speculation;
    out.acquired = (after.hits + after.misses) - (at_first.hits + at_first.misses);
    out.misses = after.misses - at_first.misses;
    out.bytes_read = after.bytes_read - at_first.bytes_read;
    return out;
}

// Rounds of the plain run's prompt again, plainly and speculating, in alternating order.
Expected<SpeculativeBenchRun> run_speculative(Engine& engine, const GenerationRequest& plain, const BenchRequest& request,
                                              const std::vector<int32_t>& plain_tokens) {
    if (request.replay_acceptance && !(*request.replay_acceptance >= 0.0 && *request.replay_acceptance <= 1.0))
        return fail(ErrorKind::invalid_argument,
                    "--draft-replay-acceptance must lie in [0, 1], not " + std::to_string(*request.replay_acceptance));
    if (request.speculation_rounds == 0) return fail(ErrorKind::invalid_argument, "--speculation-rounds must be >= 1");
    SpeculativeBenchRun out;
    out.replay_acceptance = request.replay_acceptance;
    out.same_tokens = true;
    // The gate's step costs and acceptance carry from round to round, as a server's carry from
    // request to request (docs/speculation.md): each round is one short request, and a gate that
    // met every round knowing only the prompt's rows measured its first guesses, not its choices.
    const auto memory = std::make_shared<SpeculationMemory>(moe_shape_of(engine.model()));
    for (size_t round = 0; round < request.speculation_rounds; ++round) {
        for (const bool speculating : {round % 2 == 1, round % 2 == 0}) {
            STORMO_TRY_ASSIGN(const DecodeRound r, run_round(engine, plain, request, plain_tokens, speculating, memory));
            if (!speculating) {
                out.plain_round_seconds.push_back(r.seconds);
                out.plain_acquired += r.acquired;
                continue;
            }
            out.speculative_round_seconds.push_back(r.seconds);
            out.decode_steps += r.steps;
            out.decode_seconds += r.seconds;
            out.same_tokens = out.same_tokens && r.same_tokens;
            out.stats.add(r.stats);
            out.acquired += r.acquired;
            out.misses += r.misses;
            out.bytes_read += r.bytes_read;
        }
    }
    return out;
}

}  // namespace

Expected<BenchRun> run_bench(Engine& engine, const BenchRequest& request) {
    if (request.prompt_tokens < 1) return fail(ErrorKind::invalid_argument, "--prompt-tokens must be >= 1");
    if (request.gen_tokens < 2)
        return fail(ErrorKind::invalid_argument, "--gen-tokens must be >= 2 (the first token belongs to prefill)");
    const size_t vocab = engine.model().vocab_size();
    if (vocab == 0) return fail(ErrorKind::internal, "the model reports an empty vocabulary");

    GenerationRequest gen;
    std::mt19937_64 rng(request.seed);
    gen.prompt = draw_prompt(rng, vocab, request.prompt_tokens);
    gen.max_tokens = request.gen_tokens;  // greedy (default sampling), no stop ids: exactly N tokens
    if (request.on_progress)
        gen.on_prefill_block = [&request](size_t done, size_t total) { request.on_progress("prefill", done, total); };

    BenchRun run;
    if (request.warmup) {
        STORMO_TRY_ASSIGN(auto warm_session, engine.new_session(request.prompt_tokens + 2));
        // Other random tokens than the measured prompt's, as llama-bench draws each run's afresh:
        // a streaming store must not find the measured prompt's experts warmed on purpose.
        GenerationRequest warm = gen;
        warm.prompt = draw_prompt(rng, vocab, request.prompt_tokens);
        warm.max_tokens = 2;
        warm.on_prefill_block = nullptr;
        if (auto warmed = generate(engine.pipeline(), *warm_session, warm, [](int32_t) {}); !warmed)
            return tl::unexpected(warmed.error());
        run.warmed_up = true;
    }
    STORMO_TRY_ASSIGN(auto session, engine.new_session(request.prompt_tokens + request.gen_tokens));

    run.prompt_tokens = request.prompt_tokens;
    const ForwardTimes times_before = engine.pipeline().times();
    run.before = engine.store().stats();
    bool first = true;
    // The first token is sampled from the prefill's logits: the store's counters at that moment
    // split prefill from decode.
    size_t tokens = 0;
    ForwardTimes at_first_token;
    const RemoteExperts* remote = engine.pipeline().remote_experts();
    RemoteExpertStats ranks_at_first_token;
    using Clock = std::chrono::steady_clock;
    Clock::time_point step_start;
    double probing_seconds = 0.0;
    auto on_token = [&](int32_t) {
        const auto now = Clock::now();
        ++tokens;
        if (request.on_progress) request.on_progress("decode", tokens, request.gen_tokens);
        if (first) {
            first = false;
            run.after_prefill = engine.store().stats();
            at_first_token = engine.pipeline().times();
            if (remote) ranks_at_first_token = remote->stats();
        } else if (request.probe_between_steps) {
            run.step_seconds.push_back(std::chrono::duration<double>(now - step_start).count());
        }
        if (request.probe_between_steps && tokens < request.gen_tokens) {
            const auto probe_start = Clock::now();
            if (tokens > 1) run.step_probe_bytes_per_s.push_back(request.probe_between_steps());
            else request.probe_between_steps();  // before the first step: the same pause, no step to pair
            probing_seconds += std::chrono::duration<double>(Clock::now() - probe_start).count();
        }
        step_start = Clock::now();
    };
    STORMO_TRY_ASSIGN(auto result, generate(engine.pipeline(), *session, gen, on_token));
    run.after = engine.store().stats();
    const ForwardTimes& t = engine.pipeline().times();
    run.times.attention_seconds = t.attention_seconds - times_before.attention_seconds;
    run.times.moe_seconds = t.moe_seconds - times_before.moe_seconds;
    run.times.head_seconds = t.head_seconds - times_before.head_seconds;
    run.decode_times.attention_seconds = t.attention_seconds - at_first_token.attention_seconds;
    run.decode_times.moe_seconds = t.moe_seconds - at_first_token.moe_seconds;
    run.decode_times.head_seconds = t.head_seconds - at_first_token.head_seconds;
    run.decode_bounded_head_steps = t.bounded_head_steps - at_first_token.bounded_head_steps;
    run.decode_head_rows_exact = t.head_rows_exact - at_first_token.head_rows_exact;
    run.compact_head_bytes = engine.compact_head() ? engine.compact_head()->bytes() : 0;
    run.generated_tokens = result.tokens.size();
    run.tokens = result.tokens;
    run.kv_bytes = session->kv_bytes();
    if (run.generated_tokens != request.gen_tokens)
        return fail(ErrorKind::internal, "bench: generation stopped after " + std::to_string(run.generated_tokens) +
                                             " of " + std::to_string(request.gen_tokens) + " tokens");
    run.decode_steps = run.generated_tokens - 1;
    run.prefill_seconds = result.prefill_seconds;
    run.decode_seconds = result.decode_seconds - probing_seconds;
    if (remote) run.decode_ranks = difference(remote->stats(), ranks_at_first_token);
    run.decode_acquired = (run.after.hits + run.after.misses) - (run.after_prefill.hits + run.after_prefill.misses);
    if (request.speculation.mode != SpeculateMode::off || request.replay_acceptance) {
        STORMO_TRY_ASSIGN(auto speculative, run_speculative(engine, gen, request, run.tokens));
        run.speculative = std::move(speculative);
    }
    run.peak_rss_bytes = peak_rss_bytes();
    return run;
}

BenchReport make_bench_report(const BenchRun& run, const DecodeTraffic& traffic, const RamBandwidth& ram,
                              const DiskBandwidth& disk) {
    BenchReport r;
    const double steps = static_cast<double>(run.decode_steps);
    r.prefill_tokens_per_s = ratio(static_cast<double>(run.prompt_tokens), run.prefill_seconds);
    r.decode_tokens_per_s = ratio(steps, run.decode_seconds);
    if (steps > 0) {
        const ForwardTimes& d = run.decode_times;
        r.decode_step.attention = d.attention_seconds / steps;
        r.decode_step.ffn = d.moe_seconds / steps;
        r.decode_step.head = d.head_seconds / steps;
        r.decode_step.other =
            std::max(0.0, run.decode_seconds - d.attention_seconds - d.moe_seconds - d.head_seconds) / steps;
    }

    const ExpertStoreStats& a = run.before;
    const ExpertStoreStats& p = run.after_prefill;
    const ExpertStoreStats& z = run.after;
    const uint64_t prefill_hits = sub(p.hits, a.hits), prefill_misses = sub(p.misses, a.misses);
    r.prefill_expert_hit_rate = ratio(static_cast<double>(prefill_hits), static_cast<double>(prefill_hits + prefill_misses));
    r.decode_hits = sub(z.hits, p.hits);
    r.decode_misses = sub(z.misses, p.misses);
    r.expert_hit_rate = ratio(static_cast<double>(r.decode_hits), static_cast<double>(r.decode_hits + r.decode_misses));
    r.decode_prefetch_issued = sub(z.prefetch_issued, p.prefetch_issued);
    r.decode_prefetch_used = sub(z.prefetch_used, p.prefetch_used);
    r.decode_prefetch_wasted = sub(z.prefetch_wasted, p.prefetch_wasted);
    r.decode_evictions = sub(z.evictions, p.evictions);
    const double read_bytes = static_cast<double>(sub(z.bytes_read, p.bytes_read));
    r.expert_bytes_read_per_token = ratio(read_bytes, steps);
    r.read_wait_share = ratio(z.read_wait_seconds - p.read_wait_seconds, run.decode_seconds);
    if (const double busy = z.read_busy_seconds - p.read_busy_seconds; read_bytes > 0.0 && busy > 0.0)
        r.store_read_bytes_per_s = read_bytes / busy;

    // Decode step i (1-based) runs at position prompt + i - 1 and attends over prompt + i positions.
    r.mean_decode_context = static_cast<double>(run.prompt_tokens) + (steps + 1.0) / 2.0;
    // The head as read: a bounded step reads the compact copy whole plus its exact rows, a full
    // step every row (counted by the pipeline, not estimated).
    const double head_row_bytes =
        traffic.head_rows > 0 ? static_cast<double>(traffic.head_bytes) / static_cast<double>(traffic.head_rows) : 0.0;
    r.head_exact_rows_per_token = ratio(static_cast<double>(run.decode_head_rows_exact), steps);
    r.head_bytes_read_per_token =
        steps > 0.0 ? (static_cast<double>(run.decode_bounded_head_steps) * static_cast<double>(run.compact_head_bytes) +
                       static_cast<double>(run.decode_head_rows_exact) * head_row_bytes) / steps
                    : static_cast<double>(traffic.head_bytes);
    uint64_t full = traffic.bytes_per_token(r.mean_decode_context);
    r.routed_bytes_per_token = static_cast<double>(traffic.routed_bytes());
    if (run.decode_ranks && steps > 0.0) {
        // Under mpirun this process reads only the experts it holds: what it acquired, not the
        // model's top-k, so the bound is this rank's.
        r.routed_bytes_per_token = static_cast<double>(run.decode_acquired) * static_cast<double>(traffic.expert_bytes) / steps;
        full = sub(full, traffic.routed_bytes()) + static_cast<uint64_t>(r.routed_bytes_per_token + 0.5);
    }
    r.bytes_touched_per_token =
        sub(full, traffic.head_bytes) + static_cast<uint64_t>(r.head_bytes_read_per_token + 0.5);
    r.memory_bound_tokens_per_s = ratio(ram.bytes_per_s, static_cast<double>(r.bytes_touched_per_token));
    r.memory_bound_ratio = ratio(r.decode_tokens_per_s, r.memory_bound_tokens_per_s);
    const size_t paired = std::min(run.step_seconds.size(), run.step_probe_bytes_per_s.size());
    if (paired > 0) {
        std::vector<double> ratios, probes;
        for (size_t i = 0; i < paired; ++i) {
            const double achieved = static_cast<double>(r.bytes_touched_per_token) / run.step_seconds[i];
            ratios.push_back(ratio(achieved, run.step_probe_bytes_per_s[i]));
            probes.push_back(run.step_probe_bytes_per_s[i]);
        }
        r.paired_bound_ratio = median(ratios);
        r.paired_probe_median_bytes_per_s = median(probes);
    }
    if (run.decode_ranks) {
        const RemoteExpertStats& x = *run.decode_ranks;
        RankTraffic t;
        t.bytes_sent_per_token = ratio(static_cast<double>(x.bytes_sent), steps);
        t.bytes_received_per_token = ratio(static_cast<double>(x.bytes_received), steps);
        t.messages_per_token = ratio(static_cast<double>(x.messages_sent), steps);
        t.exchanges_per_token = ratio(static_cast<double>(x.layers), steps);
        t.wait_seconds_per_token = ratio(x.wait_seconds, steps);
        t.wait_seconds_per_exchange = ratio(x.wait_seconds, static_cast<double>(x.layers));
        t.wait_share = ratio(x.wait_seconds, run.decode_seconds);
        r.ranks = t;
    }
    if (r.expert_bytes_read_per_token > 0.0 && disk.bytes_per_s > 0.0) {
        r.disk_bound_tokens_per_s = disk.bytes_per_s / r.expert_bytes_read_per_token;
        r.disk_bound_ratio = r.decode_tokens_per_s / *r.disk_bound_tokens_per_s;
    }
    if (r.store_read_bytes_per_s && disk.bytes_per_s > 0.0) r.store_read_ratio = *r.store_read_bytes_per_s / disk.bytes_per_s;
    return r;
}

bool reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    if (!clear) return false;
    clear << "5";
    clear.flush();
    return static_cast<bool>(clear);
}

}  // namespace stormo
