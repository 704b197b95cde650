#include "tools/parallel_bench.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>

#include "runtime/generation.hpp"
#include "runtime/memory_plan.hpp"
#include "runtime/sequence_generation.hpp"
#include "store/eviction.hpp"

namespace stormo {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
uint64_t sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
double ratio(double num, double den) { return den > 0.0 ? num / den : 0.0; }

void add_traffic(StoreTraffic& sum, const ExpertStoreStats& before, const ExpertStoreStats& after) {
    sum.hits += sub(after.hits, before.hits);
    sum.misses += sub(after.misses, before.misses);
    sum.bytes_read += sub(after.bytes_read, before.bytes_read);
    sum.prefetch_issued += sub(after.prefetch_issued, before.prefetch_issued);
    sum.read_wait_seconds += after.read_wait_seconds - before.read_wait_seconds;
}

// The route trace is the pipeline's; the batch lends it one and takes it back however it ends.
class RouteRecording {
public:
    RouteRecording(Pipeline& pipeline, std::vector<RouteStep>& trace) : pipeline_(pipeline) { pipeline_.record_routes(&trace); }
    ~RouteRecording() { pipeline_.record_routes(nullptr); }
    RouteRecording(const RouteRecording&) = delete;
    RouteRecording& operator=(const RouteRecording&) = delete;

private:
    Pipeline& pipeline_;
};

// Sequences of one batch: their sessions, requests and generation states, begun together.
struct Batch {
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<GenerationRequest> requests;
    std::vector<SequenceGeneration> sequences;
    std::vector<SequenceGeneration*> running;

    bool done() const {
        return std::all_of(sequences.begin(), sequences.end(), [](const SequenceGeneration& s) { return s.done(); });
    }
};

Expected<Batch> begin_batch(Engine& engine, std::vector<std::vector<int32_t>> prompts, size_t max_tokens,
                            const std::function<void(size_t sequence, int32_t token)>& on_token) {
    Batch batch;
    batch.requests.resize(prompts.size());  // never resized again: each sequence holds its request
    const auto memory = std::make_shared<SpeculationMemory>(moe_shape_of(engine.model()));
    for (size_t i = 0; i < prompts.size(); ++i) {
        STORMO_TRY_ASSIGN(auto session, engine.new_session(prompts[i].size() + max_tokens));
        batch.sessions.push_back(std::move(session));
        batch.requests[i].prompt = std::move(prompts[i]);
        batch.requests[i].max_tokens = max_tokens;  // greedy (default sampling), no stop ids
        // --speculate: the same ids; the gate's step costs learned over the whole batch.
        batch.requests[i].speculation = engine.speculation();
        batch.requests[i].speculation_memory = memory;
    }
    batch.sequences.reserve(prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
        std::function<void(int32_t)> emit;
        if (on_token) emit = [on_token, i](int32_t token) { on_token(i, token); };
        STORMO_TRY_ASSIGN(auto sequence, SequenceGeneration::begin(*batch.sessions[i], batch.requests[i], std::move(emit), {},
                                                                   engine.pipeline().mtp()));
        batch.sequences.push_back(std::move(sequence));
    }
    for (SequenceGeneration& sequence : batch.sequences) batch.running.push_back(&sequence);
    return batch;
}

// Every sequence's result, or the first failure, named by its sequence.
Expected<std::vector<GenerationResult>> take_results(Batch& batch, size_t max_tokens) {
    std::vector<GenerationResult> results;
    for (size_t i = 0; i < batch.sequences.size(); ++i) {
        auto result = batch.sequences[i].take_result();
        if (!result) return tl::unexpected(with_context(result.error(), "bench: sequence " + std::to_string(i)));
        if (result->tokens.size() != max_tokens)
            return fail(ErrorKind::internal, "bench: sequence " + std::to_string(i) + " stopped after " +
                                                 std::to_string(result->tokens.size()) + " of " +
                                                 std::to_string(max_tokens) + " tokens");
        results.push_back(std::move(*result));
    }
    return results;
}

Expected<void> no_progress() {
    return fail(ErrorKind::internal, "bench: the scheduler ran a step of no sequence while sequences were running");
}

}  // namespace

Expected<ParallelBenchRun> run_parallel_bench(Engine& engine, const ParallelBenchRequest& request) {
    if (request.sequences < 1) return fail(ErrorKind::invalid_argument, "--parallel must be >= 1");
    if (request.prompt_tokens < 1) return fail(ErrorKind::invalid_argument, "--prompt-tokens must be >= 1");
    if (request.gen_tokens < 2)
        return fail(ErrorKind::invalid_argument, "--gen-tokens must be >= 2 (the first token belongs to prefill)");
    const size_t vocab = engine.model().vocab_size();
    if (vocab == 0) return fail(ErrorKind::internal, "the model reports an empty vocabulary");
    const size_t n = request.sequences;

    // Sequence i's prompt is the i-th run of prompt_tokens draws from the seed, so sequence 0's is
    // run_bench's measured prompt; the warm-up's come after: other random tokens, as run_bench's.
    std::mt19937_64 rng(request.seed);
    std::vector<std::vector<int32_t>> prompts, warm_prompts;
    for (size_t i = 0; i < n; ++i) prompts.push_back(draw_prompt(rng, vocab, request.prompt_tokens));
    for (size_t i = 0; i < n && request.warmup; ++i) warm_prompts.push_back(draw_prompt(rng, vocab, request.prompt_tokens));

    Pipeline& pipeline = engine.pipeline();
    BatchScheduler scheduler(pipeline, request.batch);
    ParallelBenchRun run;
    run.sequences = n;
    run.prompt_tokens = request.prompt_tokens;
    run.gen_tokens = request.gen_tokens;
    run.step_rows = scheduler.settings().step_rows;

    if (request.warmup) {
        STORMO_TRY_ASSIGN(auto warm, begin_batch(engine, std::move(warm_prompts), 2, {}));
        while (!warm.done())
            if (scheduler.step(warm.running).sequences == 0) STORMO_TRY(no_progress());
        STORMO_TRY(take_results(warm, 2));
        run.warmed_up = true;
    }

    const size_t all_prompts = n * request.prompt_tokens, all_tokens = n * request.gen_tokens;
    run.first_token_seconds.assign(n, 0.0);
    run.last_token_seconds.assign(n, 0.0);
    std::vector<size_t> emitted(n, 0);
    size_t tokens = 0;
    const Clock::time_point start = Clock::now();  // every prompt arrives now
    auto on_token = [&](size_t i, int32_t) {
        run.last_token_seconds[i] = seconds_between(start, Clock::now());
        if (emitted[i]++ == 0) run.first_token_seconds[i] = run.last_token_seconds[i];
        ++tokens;
    };
    STORMO_TRY_ASSIGN(auto batch, begin_batch(engine, std::move(prompts), request.gen_tokens, on_token));
    run.before = engine.store().stats();
    std::vector<RouteStep> trace;
    {
        RouteRecording recording(pipeline, trace);
        size_t prompt_done = 0;
        while (!batch.done()) {
            trace.clear();
            const ExpertStoreStats store_before = engine.store().stats();
            const Clock::time_point step_start = Clock::now();
            const BatchStep step = scheduler.step(batch.running);
            const double seconds = seconds_between(step_start, Clock::now());
            if (step.sequences == 0) STORMO_TRY(no_progress());
            ++run.steps;
            prompt_done += step.prompt_rows;
            if (step.prompt_rows == 0 && step.decode_rows > 0) {
                ++run.decode_steps;
                if (step.decode_rows == n) ++run.full_decode_steps;
                run.decode_tokens += step.decode_rows;
                run.decode_seconds += seconds;
                add_traffic(run.decode_store, store_before, engine.store().stats());
                for (const RouteStep& layer : trace) {
                    run.decode_distinct_experts += layer.experts.size();
                    ++run.decode_moe_passes;
                }
            }
            if (request.on_progress) {
                if (step.prompt_rows > 0) request.on_progress("prefill", prompt_done, all_prompts);
                if (tokens > 0) request.on_progress("decode", tokens, all_tokens);
            }
        }
    }
    run.seconds = seconds_between(start, Clock::now());
    run.after = engine.store().stats();
    STORMO_TRY_ASSIGN(auto results, take_results(batch, request.gen_tokens));
    for (size_t i = 0; i < n; ++i) {
        run.sequence_decode_seconds.push_back(results[i].decode_seconds);
        run.tokens.push_back(std::move(results[i].tokens));
        run.kv_bytes += batch.sessions[i]->kv_bytes();
    }
    run.peak_rss_bytes = peak_rss_bytes();
    batch = Batch{};  // the sessions go before the baseline's

    if (request.baseline) {
        BenchRequest alone{request.prompt_tokens, request.gen_tokens, request.seed, request.on_progress, false};
        STORMO_TRY_ASSIGN(run.alone, run_bench(engine, alone));
    }
    return run;
}

std::optional<bool> parallel_tokens_match(const ParallelBenchRun& run, size_t* where) {
    if (!run.alone || run.tokens.empty()) return std::nullopt;
    const std::vector<int32_t>& batched = run.tokens[0];
    const std::vector<int32_t>& alone = run.alone->tokens;
    const auto [a, b] = std::mismatch(batched.begin(), batched.end(), alone.begin(), alone.end());
    if (a == batched.end() && b == alone.end()) return true;
    if (where != nullptr) *where = static_cast<size_t>(a - batched.begin());
    return false;
}

ParallelBenchReport make_parallel_bench_report(const ParallelBenchRun& run, const DecodeTraffic& traffic) {
    ParallelBenchReport r;
    for (const auto& t : run.tokens) r.generated_tokens += t.size();
    const double decode_tokens = static_cast<double>(run.decode_tokens);
    r.aggregate_decode_tokens_per_s = ratio(decode_tokens, run.decode_seconds);
    if (!run.sequence_decode_seconds.empty()) {
        const double steps = static_cast<double>(run.gen_tokens - 1);
        double sum = 0.0, least = 0.0;
        for (size_t i = 0; i < run.sequence_decode_seconds.size(); ++i) {
            const double rate = ratio(steps, run.sequence_decode_seconds[i]);
            sum += rate;
            least = i == 0 ? rate : std::min(least, rate);
        }
        r.sequence_decode_tokens_per_s_mean = sum / static_cast<double>(run.sequence_decode_seconds.size());
        r.sequence_decode_tokens_per_s_min = least;
    }
    if (!run.first_token_seconds.empty()) {
        double sum = 0.0;
        for (double s : run.first_token_seconds) sum += s;
        r.first_token_seconds_mean = sum / static_cast<double>(run.first_token_seconds.size());
        r.first_token_seconds_max = *std::max_element(run.first_token_seconds.begin(), run.first_token_seconds.end());
    }
    r.prefill_tokens_per_s =
        ratio(static_cast<double>(run.sequences * run.prompt_tokens), r.first_token_seconds_max);
    for (double last : run.last_token_seconds) {
        r.last_token_seconds_mean += last / static_cast<double>(run.last_token_seconds.size());
        r.last_token_seconds_max = std::max(r.last_token_seconds_max, last);
    }
    r.expert_bytes_read_per_token = ratio(static_cast<double>(run.decode_store.bytes_read), decode_tokens);
    r.expert_reads_per_token =
        ratio(static_cast<double>(run.decode_store.misses + run.decode_store.prefetch_issued), decode_tokens);
    r.distinct_experts_per_layer =
        ratio(static_cast<double>(run.decode_distinct_experts), static_cast<double>(run.decode_moe_passes));
    r.rows_times_top_k = static_cast<uint64_t>(run.sequences) * static_cast<uint64_t>(std::max(traffic.top_k, 0));
    if (run.alone) {
        // The bandwidths play no part in the figures taken here.
        const BenchReport alone = make_bench_report(*run.alone, traffic, RamBandwidth{}, DiskBandwidth{});
        const double steps = static_cast<double>(run.alone->decode_steps);
        r.alone_prefill_tokens_per_s = alone.prefill_tokens_per_s;
        r.alone_decode_tokens_per_s = alone.decode_tokens_per_s;
        r.alone_first_token_seconds = run.alone->prefill_seconds;
        r.alone_expert_bytes_read_per_token = alone.expert_bytes_read_per_token;
        r.alone_expert_reads_per_token =
            ratio(static_cast<double>(alone.decode_misses + alone.decode_prefetch_issued), steps);
        if (alone.decode_tokens_per_s > 0.0) r.decode_speedup = r.aggregate_decode_tokens_per_s / alone.decode_tokens_per_s;
        if (alone.expert_bytes_read_per_token > 0.0)
            r.expert_bytes_per_token_ratio = r.expert_bytes_read_per_token / alone.expert_bytes_read_per_token;
        if (run.alone->prefill_seconds > 0.0) r.first_token_ratio = r.first_token_seconds_max / run.alone->prefill_seconds;
        r.alone_last_token_seconds = run.alone->prefill_seconds + run.alone->decode_seconds;
        if (*r.alone_last_token_seconds > 0.0) r.last_token_ratio = r.last_token_seconds_max / *r.alone_last_token_seconds;
    }
    return r;
}

}  // namespace stormo
