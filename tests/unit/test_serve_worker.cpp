// The serve worker without HTTP, over the gpt-oss demo with two slots: queued jobs answered in
// arrival order, more than the slots at once, each as it is alone; a job whose client left while
// it waited is answered cancelled without taking a slot; the gauges count the slots and the KV.
#include <gtest/gtest.h>

#include "oracle_support.hpp"
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

    std::unique_ptr<InferenceWorker> start(RequestQueue& queue, Metrics& metrics) {
        WorkerContext ctx;
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

    std::shared_ptr<Job> job(const std::string& prompt, size_t max_tokens, SamplingParams sampling = {}) {
        PreparedRequest p;
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

}  // namespace
}  // namespace stormo::serve
