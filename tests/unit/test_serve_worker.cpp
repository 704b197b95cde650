// The serve worker without HTTP, over the gpt-oss demo with two slots: queued jobs answered in
// arrival order, more than the slots at once, each as it is alone; a job whose client left while
// it waited is answered cancelled without taking a slot; the gauges count the slots and the KV.
// With the prompt cache: a prefix computed before a restart is restored (cached_tokens) and the
// answer is a cold server's; one partition's prefix is never reused by another, neither from the
// cache nor from a slot's KV; a hit prefetches the experts its prefix last chose.
#include <gtest/gtest.h>

#include "oracle_support.hpp"
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iterator>

#include "runtime/engine_identity.hpp"
#include "runtime/generation.hpp"
#include "serve/inference_worker.hpp"

namespace stormo::serve {
namespace {

struct Served {
    JobResult result;
    std::string streamed;  // the pieces' text as the connection got it
};

Served wait_for(Job& job) {
    Served out;
    for (;;) {
        Job::Update u = job.wait(std::chrono::milliseconds(50));
        for (const auto& piece : u.pieces) out.streamed += piece.text;
        if (u.result) {
            out.result = std::move(*u.result);
            return out;
        }
    }
}

class ServeWorker : public ::testing::Test {
protected:
    void SetUp() override {
        auto tokenizer = text::Tokenizer::load(stormo::testing::demo_dir());
        ASSERT_TRUE(tokenizer) << tokenizer.error().message;
        tokenizer_.emplace(std::move(*tokenizer));
        EngineOptions o;
        o.setup.model_dir = stormo::testing::demo_dir();
        o.threads = 1;
        o.context = 256;
        o.sequences = 2;
        o.expert_budget = SizeSpec{SizeSpec::Kind::all, 0};
        auto engine = Engine::open(o);
        ASSERT_TRUE(engine) << engine.error().message;
        engine_ = std::move(*engine);
        ASSERT_EQ(engine_->memory().sequences, 2u);
        for (int i = 0; i < 2; ++i) {
            auto session = engine_->new_session(256);
            ASSERT_TRUE(session) << session.error().message;
            sessions_.push_back(std::move(*session));
        }
    }

    std::unique_ptr<InferenceWorker> start(RequestQueue& queue, Metrics& metrics, PromptCache* cache = nullptr) {
        WorkerContext ctx;
        ctx.cache = cache;
        ctx.engine = engine_.get();
        for (auto& s : sessions_) ctx.sessions.push_back(s.get());
        ctx.tokenizer = &*tokenizer_;
        ctx.stop_ids = {48};  // <|end|>
        ctx.queue = &queue;
        ctx.metrics = &metrics;
        auto worker = std::make_unique<InferenceWorker>(std::move(ctx));
        worker->start();
        return worker;
    }

    std::shared_ptr<Job> job(const std::string& prompt, size_t max_tokens, SamplingParams sampling = {},
                             const std::string& partition = {}) {
        PreparedRequest p;
        p.partition = partition;
        p.endpoint = Endpoint::completion;
        p.prompt = tokenizer_->encode(prompt, true);
        p.max_tokens = max_tokens;
        p.sampling = sampling;
        return std::make_shared<Job>(std::move(p), -1);
    }

    std::optional<text::Tokenizer> tokenizer_;
    std::unique_ptr<Engine> engine_;
    std::vector<std::unique_ptr<Session>> sessions_;
};

TEST_F(ServeWorker, MoreJobsThanSlotsAreAnsweredEachAsAlone) {
    SamplingParams sampled;
    sampled.temperature = 0.9f;
    sampled.seed = 7;
    const std::vector<std::pair<std::string, SamplingParams>> asks = {
        {"12+34=", {}}, {"rev:hello=", {}}, {"sort:dcab=", {}}, {"999+1=", sampled}, {"copy:abc=", sampled}};

    // Alone: one job at a time.
    std::vector<Served> alone;
    {
        RequestQueue queue(8);
        Metrics metrics;
        auto worker = start(queue, metrics);
        for (const auto& [prompt, sampling] : asks) {
            auto j = job(prompt, 12, sampling);
            ASSERT_TRUE(queue.try_push(j));
            alone.push_back(wait_for(*j));
        }
        queue.close();
        worker->join();
    }
    EXPECT_EQ(alone[0].result.content, "46");
    EXPECT_EQ(alone[1].result.content, "olleh");
    EXPECT_EQ(alone[2].result.content, "abcd");

    // Together, with a job whose client left while it waited in the middle of the queue.
    RequestQueue queue(8);
    Metrics metrics;
    std::vector<std::shared_ptr<Job>> jobs;
    for (const auto& [prompt, sampling] : asks) jobs.push_back(job(prompt, 12, sampling));
    auto gone = job("1+1=", 12);
    gone->cancel_client_gone();
    jobs.insert(jobs.begin() + 2, gone);
    for (const auto& j : jobs) ASSERT_TRUE(queue.try_push(j));
    auto worker = start(queue, metrics);
    std::vector<Served> together;
    for (const auto& j : jobs) together.push_back(wait_for(*j));
    EXPECT_EQ(worker->slots(), 2u);
    EXPECT_EQ(worker->running(), 0u);
    EXPECT_GT(worker->kv_bytes_in_use(), 0u);
    EXPECT_LE(worker->kv_bytes_in_use(), worker->kv_bytes_reserved());
    queue.close();
    worker->join();

    EXPECT_EQ(together[2].result.finish, FinishReason::cancelled);
    EXPECT_EQ(together[2].result.completion_tokens, 0u);
    together.erase(together.begin() + 2);
    for (size_t i = 0; i < asks.size(); ++i) {
        EXPECT_EQ(together[i].result.content, alone[i].result.content) << asks[i].first;
        EXPECT_EQ(together[i].streamed, alone[i].streamed) << asks[i].first;
        EXPECT_EQ(together[i].result.completion_tokens, alone[i].result.completion_tokens) << asks[i].first;
        EXPECT_EQ(together[i].result.finish, alone[i].result.finish) << asks[i].first;
        EXPECT_FALSE(together[i].result.error) << asks[i].first;
    }
    EXPECT_EQ(metrics.requests(Outcome::ok), asks.size());
    EXPECT_EQ(metrics.requests(Outcome::cancelled), 1u);
    // Two slots for five jobs: some steps ran two sequences.
    MetricsGauges gauges;
    const std::string text = metrics.render(gauges);
    const auto value = [&](const std::string& name) {
        const size_t at = text.find("\n" + name + " ");
        return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + 2));
    };
    EXPECT_GT(value("stormo_batch_sequences_total"), value("stormo_batch_steps_total"));
}

class ServeWorkerCache : public ServeWorker {
protected:
    void SetUp() override {
        ServeWorker::SetUp();
        if (HasFatalFailure()) return;
        dir_ = std::filesystem::temp_directory_path() / ("stormo-serve-cache-" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir_);
        auto id = engine_identity(*engine_);
        ASSERT_TRUE(id) << id.error().message;
        identity_ = *id;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }
    // A new cache on the directory: what a server started again finds.
    std::unique_ptr<PromptCache> open_cache() {
        PromptCacheSettings s;
        s.dir = dir_.string();
        s.size_bytes = uint64_t{1} << 30;
        s.block_positions = kB;
        auto cache = PromptCache::open(s, identity_, sessions_.front()->layout());
        EXPECT_TRUE(cache) << cache.error().message;
        return cache ? std::move(*cache) : nullptr;
    }
    // The slots as a server started again has them: empty.
    void empty_slots() {
        for (auto& s : sessions_) s->rewind(0);
    }
    // Runs the jobs one after another through a worker (with `cache`, or none).
    std::vector<JobResult> run(std::vector<std::shared_ptr<Job>> jobs, PromptCache* cache) {
        RequestQueue queue(8);
        Metrics metrics;
        auto worker = start(queue, metrics, cache);
        std::vector<JobResult> results;
        for (const auto& j : jobs) {
            EXPECT_TRUE(queue.try_push(j));
            results.push_back(wait_for(*j).result);
            EXPECT_FALSE(results.back().error) << results.back().error->message;
        }
        queue.close();
        worker->join();
        if (cache != nullptr) metrics_text_ = metrics.render(MetricsGauges{});
        return results;
    }
    std::string run_one(const std::string& prompt, PromptCache* cache) {
        const auto results = run({job(prompt, 12)}, cache);
        return results.empty() ? std::string() : results[0].content;
    }
    static constexpr size_t kB = 16;
    const std::string prefix_ = "copy:abcdefghijklmnopqrstuvwxyzabcdefghijklmnop";
    std::filesystem::path dir_;
    EngineIdentity identity_;
    std::string metrics_text_;
};

TEST_F(ServeWorkerCache, APrefixComputedBeforeARestartIsRestoredAndTheAnswerIsAColdServers) {
    const std::string first = prefix_ + "qrs=", second = prefix_ + "xyz=";
    const JobResult cold = run({job(second, 12)}, nullptr)[0];
    EXPECT_EQ(cold.cached_tokens, 0u);
    empty_slots();
    {
        auto cache = open_cache();
        run({job(first, 12)}, cache.get());
        EXPECT_GE(cache->stats().blocks_written, 2u);
    }
    empty_slots();
    auto cache = open_cache();
    const JobResult warm = run({job(second, 12)}, cache.get())[0];
    const size_t prompt = tokenizer_->encode(second, true).size();
    EXPECT_EQ(warm.prompt_tokens, prompt);
    EXPECT_GE(warm.cached_tokens, 2 * kB);
    EXPECT_EQ(warm.cached_tokens % kB, 0u);
    EXPECT_GT(cache->stats().disk_hits, 0u);
    EXPECT_EQ(warm.content, cold.content);
    EXPECT_EQ(warm.completion_tokens, cold.completion_tokens);
    EXPECT_NE(metrics_text_.find("stormo_prompt_cache_block_hits_total{tier=\"disk\"} "), std::string::npos);
    EXPECT_NE(metrics_text_.find("stormo_prompt_cache_positions_restored_total "), std::string::npos);
}

TEST_F(ServeWorkerCache, OnePartitionsPrefixIsNeverReusedByAnother) {
    const std::string a = cache_partition("key-a"), b = cache_partition("key-b");
    auto cache = open_cache();
    const std::string prompt = prefix_ + "qrs=";
    // a fills a slot and the cache; b (the same prompt) gets neither; a again gets both.
    const auto results = run({job(prompt, 4, {}, a), job(prompt, 4, {}, b), job(prompt, 4, {}, b), job(prompt, 4, {}, a)},
                             cache.get());
    EXPECT_EQ(results[0].cached_tokens, 0u);
    EXPECT_EQ(results[1].cached_tokens, 0u);
    EXPECT_GT(results[2].cached_tokens, 0u);  // b's own prefix, from its own slot
    EXPECT_GT(results[3].cached_tokens, 0u);
    for (const JobResult& r : results) EXPECT_EQ(r.content, results[0].content);
    // Restarted, b finds only its own blocks, none of a's: the same count as a.
    empty_slots();
    auto again = open_cache();
    const auto restarted = run({job(prefix_ + "zz=", 4, {}, b)}, again.get());
    EXPECT_GT(restarted[0].cached_tokens, 0u);
    empty_slots();
    const auto stranger = run({job(prefix_ + "zz=", 4, {}, cache_partition("key-c"))}, again.get());
    EXPECT_EQ(stranger[0].cached_tokens, 0u);
}

// A restart with a streaming store (its slots empty, the pipeline's own prediction off): the hit
// reads the experts its prefix's last tokens chose before the first step asks for them.
TEST_F(ServeWorkerCache, AHitPrefetchesTheExpertsItsPrefixLastChose) {
    const std::string prompt = prefix_ + "qrs=";
    uint64_t prefetched[2] = {0, 0};
    std::string answers[2];
    for (int run = 0; run < 2; ++run) {
        EngineOptions o;
        o.setup.model_dir = stormo::testing::demo_dir();
        o.threads = 1;
        o.context = 256;
        o.sequences = 2;
        o.expert_budget = SizeSpec{SizeSpec::Kind::bytes, uint64_t{1} << 20};
        o.pipeline.prefetch = false;
        sessions_.clear();
        engine_.reset();
        auto engine = Engine::open(o);
        ASSERT_TRUE(engine) << engine.error().message;
        ASSERT_TRUE((*engine)->store().streams());
        engine_ = std::move(*engine);
        for (int i = 0; i < 2; ++i) sessions_.push_back(std::move(*engine_->new_session(256)));
        auto cache = open_cache();
        answers[run] = run_one(prompt, cache.get());
        prefetched[run] = engine_->store().stats().prefetch_issued;
    }
    EXPECT_EQ(prefetched[0], 0u);  // a miss prefetches nothing
    EXPECT_GT(prefetched[1], 0u);
    EXPECT_EQ(answers[1], answers[0]);
}

// Logprobs: one entry per generated token but the final stop id, each the log-softmax of the
// logits the token was chosen from (as a lone generation over the same session sees them), its
// top alternatives most likely first; streamed as they come; and the tokens are the ones a job
// without logprobs gets.
TEST_F(ServeWorker, MtpPerRequestOnAModelWithoutTheLayerIsA400AndTheSlotServesOn) {
    // The gpt-oss demo has no MTP layer: a request asking for mtp drafts is the client's error,
    // named, before it touches a slot; the next request is answered as if it had never come.
    RequestQueue queue(8);
    Metrics metrics;
    auto worker = start(queue, metrics);
    PreparedRequest p;
    p.endpoint = Endpoint::completion;
    p.prompt = tokenizer_->encode("rev:hello=", true);
    p.max_tokens = 12;
    p.speculate = SpeculateMode::mtp;
    auto asked = std::make_shared<Job>(std::move(p), -1);
    ASSERT_TRUE(queue.try_push(asked));
    const Served refused = wait_for(*asked);
    ASSERT_TRUE(refused.result.error.has_value());
    EXPECT_EQ(refused.result.error->status, 400);
    EXPECT_NE(refused.result.error->message.find("multi-token-prediction"), std::string::npos) << refused.result.error->message;
    EXPECT_NE(refused.result.error->message.find("'speculate'"), std::string::npos) << refused.result.error->message;
    auto plain = job("rev:hello=", 12);
    ASSERT_TRUE(queue.try_push(plain));
    EXPECT_EQ(wait_for(*plain).result.content, "olleh");
    queue.close();
    worker->join();
}

TEST_F(ServeWorker, LogprobsAreTheLogSoftmaxOfTheLogitsEachTokenCameFrom) {
    SamplingParams sampled;
    sampled.temperature = 1.3f;
    sampled.seed = 11;
    for (const SamplingParams& sampling : {SamplingParams{}, sampled}) {
        RequestQueue queue(4);
        Metrics metrics;
        auto worker = start(queue, metrics);
        auto plain = job("rev:hello=", 12, sampling);
        ASSERT_TRUE(queue.try_push(plain));
        const Served without = wait_for(*plain);
        auto asked = std::make_shared<Job>(
            [&] {
                PreparedRequest p = plain->request();
                p.top_logprobs = 3;
                return p;
            }(),
            -1);
        ASSERT_TRUE(queue.try_push(asked));
        std::vector<LogprobEntry> streamed;
        std::optional<JobResult> result;
        while (!result) {
            Job::Update u = asked->wait(std::chrono::milliseconds(50));
            std::ranges::move(u.logprobs, std::back_inserter(streamed));
            if (u.result) result = std::move(u.result);
        }
        queue.close();
        worker->join();
        EXPECT_EQ(result->content, without.result.content);
        EXPECT_EQ(result->completion_tokens, without.result.completion_tokens);
        // A stop id that ended the answer has no entry.
        const bool stopped = result->finish == FinishReason::stop;
        if (sampling.temperature == 0.0f) EXPECT_TRUE(stopped);
        ASSERT_EQ(result->logprobs.size(), result->completion_tokens - (stopped ? 1 : 0));
        ASSERT_EQ(streamed.size(), result->logprobs.size());

        // The reference: the same prompt in a fresh session, the logits of every token kept.
        auto session = engine_->new_session(256);
        ASSERT_TRUE(session);
        GenerationRequest g;
        g.prompt = plain->request().prompt;
        g.max_tokens = 12;
        g.sampling = sampling;
        g.stop_ids = {48};
        std::vector<std::vector<float>> rows;
        std::vector<int32_t> tokens;
        g.on_logits = [&](std::span<const float> logits, int32_t token) {
            rows.emplace_back(logits.begin(), logits.end());
            tokens.push_back(token);
        };
        ASSERT_TRUE(generate(engine_->pipeline(), **session, g));
        ASSERT_EQ(tokens.size(), result->completion_tokens);
        std::string text;
        for (size_t i = 0; i < result->logprobs.size(); ++i) {
            const LogprobEntry& e = result->logprobs[i];
            const std::vector<float>& row = rows[i];
            long double largest = row[0], sum = 0;
            for (const float x : row) largest = std::max<long double>(largest, x);
            for (const float x : row) sum += std::exp(static_cast<long double>(x) - largest);
            auto reference = [&](int32_t id) {
                return static_cast<double>(static_cast<long double>(row[static_cast<size_t>(id)]) - largest - std::log(sum));
            };
            EXPECT_NEAR(e.token.logprob, reference(tokens[i]), 1e-12) << i;
            EXPECT_EQ(e.token.bytes, *tokenizer_->token_bytes(tokens[i]));
            ASSERT_EQ(e.top.size(), 3u);
            EXPECT_GE(e.top[0].logprob, e.top[1].logprob);
            EXPECT_GE(e.top[1].logprob, e.top[2].logprob);
            EXPECT_NEAR(e.top[0].logprob, reference(argmax(row)), 1e-12);
            if (sampling.temperature == 0.0f) EXPECT_EQ(e.token.logprob, e.top[0].logprob);
            EXPECT_EQ(streamed[i].token.bytes, e.token.bytes);
            EXPECT_EQ(streamed[i].token.logprob, e.token.logprob);
            text += e.token.bytes;
        }
        if (sampling.temperature == 0.0f) EXPECT_EQ(text, result->content);
    }
}

}  // namespace
}  // namespace stormo::serve
