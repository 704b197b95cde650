// Continuous batching: several sequences in one forward pass give each the bits it gets alone.
// Every fixture, demo and a GGUF file per family, under the engine settings that choose different
// code (kernels, the int8 road, a streaming store at its minimum budget, one thread or two):
//   - Pipeline::forward_batch with sequences that join at different steps and feed prompt chunks
//     of different sizes gives each step's last row the logits bits of a prefill of that
//     sequence alone, and its argmax;
//   - BatchScheduler over requests of different prompts, lengths, sampling settings and seeds,
//     joining at different steps, gives each the tokens generate() gives it alone;
//   - a request that fails in a batched step fails alone: the others' tokens are unchanged.
#include <cstring>
#include <memory>

#include "oracle_support.hpp"
#include "runtime/batch_scheduler.hpp"
#include "runtime/generation.hpp"
#include "runtime/sequence_generation.hpp"

namespace stormo::testing {
namespace {

struct Setting {
    std::string name;
    std::string kernels = "auto";
    ActivationRoad road = ActivationRoad::f32;
    bool min_budget = false;  // stream the experts through top_k slots
    size_t threads = 2;
};

std::vector<Setting> settings() {
    return {{"auto", "auto", ActivationRoad::f32, false, 2},
            {"reference-streaming-1thread", "reference", ActivationRoad::f32, true, 1},
            {"int8-streaming", "auto", ActivationRoad::int8, true, 2}};
}

// An engine for `s`; the minimum budget is top_k slots, the slot size read off an engine that
// streams with a budget just under the total.
Expected<std::unique_ptr<Engine>> open_for(const std::string& dir, const Setting& s) {
    EngineOptions o;
    o.setup.model_dir = dir;
    o.setup.kernels.value = s.kernels;
    o.threads = s.threads;
    o.activations = s.road;
    if (!s.min_budget) return Engine::open(o);
    EngineOptions probe = o;
    probe.expert_budget.kind = SizeSpec::Kind::all;
    STORMO_TRY_ASSIGN(auto resident, Engine::open(probe));
    const int layer = first_moe_layer(resident->model());
    if (layer < 0) return fail(ErrorKind::internal, dir + " has no MoE layer");
    const uint64_t top_k = static_cast<uint64_t>(resident->model().layer_plan(layer).top_k);
    probe.expert_budget.kind = SizeSpec::Kind::bytes;
    probe.expert_budget.bytes = resident->store().total_expert_bytes() - 1;
    resident.reset();
    STORMO_TRY_ASSIGN(auto streaming, Engine::open(probe));
    o.expert_budget.kind = SizeSpec::Kind::bytes;
    o.expert_budget.bytes = streaming->store().stats().slot_bytes * top_k;
    return Engine::open(o);
}

// Sequence i: the source rotated by 3i, `length` long.
std::vector<int32_t> sequence_of(const std::vector<int32_t>& source, size_t i, size_t length) {
    std::vector<int32_t> s(length);
    for (size_t j = 0; j < length; ++j) s[j] = source[(3 * i + j) % source.size()];
    return s;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class Batching : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        dir_ = model_dir_of(GetParam());
        source_ = token_source_of(GetParam());
        auto probe = try_open_engine(dir_);
        if (!probe && probe.error().kind == ErrorKind::unsupported) GTEST_SKIP() << probe.error().message;
        ASSERT_TRUE(probe.has_value()) << probe.error().message;
    }
    std::string dir_;
    std::vector<int32_t> source_;
};

// Sequence i joins at step joins[i] and feeds its tokens in chunks of chunk[i] (the last chunk
// shorter); the steps ask for the last row's logits, or its argmax on every third step.
TEST_P(Batching, EachSequenceGetsTheLogitsBitsOfItsPrefillAlone) {
    // The first sequence is the whole reference sequence: the long fixtures' wrap a sliding
    // window's ring (sessions of 8-position blocks keep window + 7 rows) and pass GLM's index_topk.
    const std::vector<size_t> lengths = {source_.size(), std::min<size_t>(source_.size(), 9),
                                         std::min<size_t>(source_.size(), 12), 1};
    const std::vector<size_t> chunks = {4, 1, 5, 1};
    const std::vector<size_t> joins = {0, 0, 2, 3};
    for (const Setting& setting : settings()) {
        auto engine = open_for(dir_, setting);
        ASSERT_TRUE(engine.has_value()) << setting.name << ": " << engine.error().message;
        Pipeline& pipeline = (*engine)->pipeline();
        std::vector<std::vector<int32_t>> sequences;
        std::vector<std::vector<float>> alone;  // every position's logits, one prefill alone
        for (size_t i = 0; i < lengths.size(); ++i) {
            sequences.push_back(sequence_of(source_, i, lengths[i]));
            auto session = (*engine)->new_session(lengths[i]);
            ASSERT_TRUE(session.has_value());
            ForwardOptions all;
            all.all_logits = true;
            auto logits = pipeline.forward(**session, sequences.back(), all);
            ASSERT_TRUE(logits.has_value()) << logits.error().message;
            alone.push_back(*logits);
        }
        const size_t vocab = (*engine)->model().vocab_size();
        std::vector<std::unique_ptr<Session>> sessions;
        for (size_t i = 0; i < lengths.size(); ++i) sessions.push_back(std::move(*(*engine)->new_session(lengths[i], 8)));
        std::vector<size_t> fed(lengths.size(), 0);
        size_t compared = 0;
        for (size_t step = 0; step < 256; ++step) {
            std::vector<SequenceStep> steps;
            std::vector<size_t> who;
            for (size_t i = 0; i < lengths.size(); ++i) {
                if (step < joins[i] || fed[i] == lengths[i]) continue;
                const size_t n = std::min(chunks[i], lengths[i] - fed[i]);
                const auto want = (step + i) % 3 == 2 ? SequenceStep::Want::last_argmax : SequenceStep::Want::last_logits;
                steps.push_back({sessions[i].get(), std::span<const int32_t>(sequences[i]).subspan(fed[i], n), want, {}, -1});
                who.push_back(i);
            }
            if (steps.empty()) break;
            auto ran = pipeline.forward_batch(steps);
            ASSERT_TRUE(ran.has_value()) << setting.name << ": " << ran.error().message;
            for (size_t k = 0; k < steps.size(); ++k) {
                const size_t i = who[k];
                fed[i] += steps[k].tokens.size();
                const std::span<const float> expected(alone[i].data() + (fed[i] - 1) * vocab, vocab);
                if (steps[k].want == SequenceStep::Want::last_argmax)
                    EXPECT_EQ(steps[k].argmax, argmax(expected)) << setting.name << ": sequence " << i << " at " << fed[i];
                else
                    EXPECT_TRUE(same_bits(steps[k].logits, expected))
                        << setting.name << ": sequence " << i << " at position " << fed[i] - 1 << " in step " << step;
                ++compared;
            }
        }
        for (size_t i = 0; i < lengths.size(); ++i) EXPECT_EQ(fed[i], lengths[i]) << setting.name;
        EXPECT_GE(compared, lengths.size());
    }
}

struct Request {
    std::vector<int32_t> prompt;
    size_t max_tokens = 0;
    SamplingParams sampling;
    size_t join = 0;  // the scheduler step at which it arrives
};

std::vector<Request> requests_for(const std::vector<int32_t>& source) {
    std::vector<Request> r(5);
    const size_t long_prompt = std::min<size_t>(source.size(), 14);
    r[0] = {sequence_of(source, 0, long_prompt), 9, {}, 0};
    r[1] = {sequence_of(source, 1, 3), 12, {}, 0};
    r[1].sampling.temperature = 0.9f;
    r[1].sampling.seed = 11;
    r[2] = {sequence_of(source, 2, 7), 6, {}, 1};
    r[2].sampling.temperature = 1.2f;
    r[2].sampling.top_p = 0.8f;
    r[2].sampling.top_k = 20;
    r[2].sampling.seed = 7;
    r[3] = {sequence_of(source, 3, 1), 10, {}, 3};
    r[3].sampling.repetition_penalty = 1.3f;
    r[4] = {sequence_of(source, 4, long_prompt), 4, {}, 4};
    r[4].sampling.temperature = 0.7f;
    r[4].sampling.min_p = 0.05f;
    r[4].sampling.seed = 99;
    return r;
}

GenerationRequest generation_of(const Request& r) {
    GenerationRequest g;
    g.prompt = r.prompt;
    g.max_tokens = r.max_tokens;
    g.sampling = r.sampling;
    g.whole_context = true;
    return g;
}

// Runs the requests through a scheduler of `step_rows`, each joining at its step; a request
// listed in `poisoned` gets an id outside the vocabulary at the end of its prompt.
std::vector<Expected<GenerationResult>> run_batched(Engine& engine, const std::vector<Request>& requests, size_t step_rows,
                                                    std::optional<size_t> poisoned = std::nullopt) {
    std::vector<GenerationRequest> generation;
    for (size_t i = 0; i < requests.size(); ++i) {
        generation.push_back(generation_of(requests[i]));
        if (poisoned == i) generation.back().prompt.back() = static_cast<int32_t>(engine.model().vocab_size()) + 5;
    }
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<std::optional<SequenceGeneration>> sequences(requests.size());
    for (const Request& r : requests) sessions.push_back(std::move(*engine.new_session(r.prompt.size() + r.max_tokens)));
    BatchScheduler scheduler(engine.pipeline(), BatchSettings{step_rows});
    std::vector<Expected<GenerationResult>> results(requests.size(), tl::unexpected(Error{ErrorKind::internal, "never ran"}));
    for (size_t step = 0; step < 1000; ++step) {
        std::vector<SequenceGeneration*> running;
        bool pending = false;
        for (size_t i = 0; i < requests.size(); ++i) {
            if (!sequences[i] && requests[i].join <= step) {
                auto begun = SequenceGeneration::begin(*sessions[i], generation[i]);
                EXPECT_TRUE(begun.has_value()) << begun.error().message;
                if (!begun) return results;
                sequences[i].emplace(std::move(*begun));
            }
            if (!sequences[i]) pending = true;
            else if (!sequences[i]->done()) running.push_back(&*sequences[i]);
        }
        if (running.empty() && !pending) break;
        scheduler.step(running);
        for (size_t i = 0; i < requests.size(); ++i)
            if (sequences[i] && sequences[i]->done() && !results[i] && results[i].error().message == "never ran")
                results[i] = sequences[i]->take_result();
    }
    return results;
}

TEST_P(Batching, ConcurrentRequestsGetTheTokensTheyGetAlone) {
    const std::vector<Request> requests = requests_for(source_);
    for (const Setting& setting : settings()) {
        auto engine = open_for(dir_, setting);
        ASSERT_TRUE(engine.has_value()) << setting.name << ": " << engine.error().message;
        std::vector<std::vector<int32_t>> alone;
        for (const Request& r : requests) {
            auto session = (*engine)->new_session(r.prompt.size() + r.max_tokens);
            ASSERT_TRUE(session.has_value());
            auto result = generate((*engine)->pipeline(), **session, generation_of(r));
            ASSERT_TRUE(result.has_value()) << result.error().message;
            alone.push_back(result->tokens);
        }
        for (size_t step_rows : {size_t{3}, size_t{64}}) {
            const auto batched = run_batched(**engine, requests, step_rows);
            for (size_t i = 0; i < requests.size(); ++i) {
                ASSERT_TRUE(batched[i].has_value()) << setting.name << ": request " << i << ": " << batched[i].error().message;
                EXPECT_EQ(batched[i]->tokens, alone[i]) << setting.name << ", steps of " << step_rows << " rows: request " << i;
            }
        }
    }
}

TEST_P(Batching, ARequestThatFailsInABatchFailsAloneAndTheOthersGoOn) {
    const std::vector<Request> requests = requests_for(source_);
    auto engine = open_for(dir_, settings().front());
    ASSERT_TRUE(engine.has_value()) << engine.error().message;
    const auto clean = run_batched(**engine, requests, 64);
    const auto batched = run_batched(**engine, requests, 64, 2);
    for (size_t i = 0; i < requests.size(); ++i) {
        ASSERT_TRUE(clean[i].has_value()) << clean[i].error().message;
        if (i == 2) {
            ASSERT_FALSE(batched[i].has_value()) << "a prompt id outside the vocabulary was accepted";
            EXPECT_NE(batched[i].error().message.find("outside the vocabulary"), std::string::npos) << batched[i].error().message;
            continue;
        }
        ASSERT_TRUE(batched[i].has_value()) << "request " << i << ": " << batched[i].error().message;
        EXPECT_EQ(batched[i]->tokens, clean[i]->tokens) << "request " << i;
    }
}

std::vector<std::string> batching_models() {
    std::vector<std::string> models = fixture_and_demo_names();
    for (const char* f : {"gpt_oss_mxfp4-f16.gguf", "qwen3_moe-q8_0.gguf", "glm_moe_dsa-f16.gguf", "deepseek_v3-q8_0.gguf"})
        models.push_back(f);
    return models;
}

INSTANTIATE_TEST_SUITE_P(Models, Batching, ::testing::ValuesIn(batching_models()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return test_name_of(info.param); });

}  // namespace
}  // namespace stormo::testing
