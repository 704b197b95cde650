// BatchSettings::chunk_boundary: a prompt chunk that would cross a multiple of the boundary ends
// there, so every sequence's position lands on each multiple at the end of a step (where the
// prompt cache captures a block), whatever the step's row budget and however the prompts take
// their turns; and the tokens stay the ones each request gets alone.
#include "oracle_support.hpp"
#include "runtime/batch_scheduler.hpp"
#include "runtime/generation.hpp"
#include "runtime/sequence_generation.hpp"

namespace stormo::testing {
namespace {

constexpr size_t kBoundary = 16;

std::vector<int32_t> prompt_of(const std::vector<int32_t>& source, size_t shift, size_t length) {
    std::vector<int32_t> out(length);
    for (size_t j = 0; j < length; ++j) out[j] = source[(shift + j) % source.size()];
    return out;
}

class ChunkBoundary : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override { STORMO_OPEN_FIXTURE_OR_SKIP(engine_, model_dir_of(GetParam())); }
    std::unique_ptr<Engine> engine_;
};

TEST_P(ChunkBoundary, PromptChunksEndOnEveryBoundaryTheyCrossAndTheTokensStayTheSame) {
    const std::vector<int32_t> source = token_source_of(GetParam());
    std::vector<GenerationRequest> requests;
    for (const auto& [shift, length, temperature] : {std::tuple{0, 45, 0.0f}, std::tuple{3, 33, 0.9f}, std::tuple{6, 20, 0.0f},
                                                     std::tuple{9, 70, 1.1f}, std::tuple{1, 16, 0.0f}}) {
        GenerationRequest g;
        g.prompt = prompt_of(source, static_cast<size_t>(shift), static_cast<size_t>(length));
        g.max_tokens = 6;
        g.sampling.temperature = temperature;
        g.sampling.seed = 5;
        g.whole_context = true;
        requests.push_back(std::move(g));
    }
    std::vector<std::vector<int32_t>> alone;
    for (const GenerationRequest& g : requests) {
        auto session = engine_->new_session(g.prompt.size() + g.max_tokens);
        ASSERT_TRUE(session.has_value());
        auto result = generate(engine_->pipeline(), **session, g);
        ASSERT_TRUE(result.has_value()) << result.error().message;
        alone.push_back(result->tokens);
    }
    for (const size_t step_rows : {size_t{5}, size_t{12}, size_t{64}}) {
        BatchSettings settings;
        settings.step_rows = step_rows;
        settings.chunk_boundary = kBoundary;
        settings.route_boundary = kBoundary;
        BatchScheduler scheduler(engine_->pipeline(), settings);
        std::vector<std::unique_ptr<Session>> sessions;
        std::vector<SequenceGeneration> sequences;
        for (const GenerationRequest& g : requests) {
            sessions.push_back(std::move(*engine_->new_session(g.prompt.size() + g.max_tokens)));
            auto begun = SequenceGeneration::begin(*sessions.back(), g);
            ASSERT_TRUE(begun.has_value()) << begun.error().message;
            sequences.push_back(std::move(*begun));
        }
        std::vector<std::vector<size_t>> step_ends(requests.size());
        for (size_t step = 0; step < 1000; ++step) {
            std::vector<SequenceGeneration*> running;
            std::vector<size_t> before(requests.size());
            for (size_t i = 0; i < sequences.size(); ++i) {
                before[i] = sessions[i]->position();
                if (!sequences[i].done()) running.push_back(&sequences[i]);
            }
            if (running.empty()) break;
            const BatchStep report = scheduler.step(running);
            for (size_t i = 0; i < sequences.size(); ++i) {
                const size_t after = sessions[i]->position();
                if (after == before[i]) continue;
                // A step ending on a boundary (chunks never cross one here) reports the experts its
                // last rows chose, per layer.
                const auto routed = std::find_if(report.routes.begin(), report.routes.end(),
                                                 [&](const BatchStep::Routed& r) { return r.sequence == &sequences[i]; });
                EXPECT_EQ(routed != report.routes.end(), after % kBoundary == 0) << "sequence " << i << " at " << after;
                if (routed != report.routes.end()) {
                    const Model& model = engine_->model();
                    ASSERT_EQ(routed->experts.size(), static_cast<size_t>(model.n_layers()));
                    for (int l = 0; l < model.n_layers(); ++l) {
                        const LayerPlan& plan = model.layer_plan(l);
                        const auto& chosen = routed->experts[static_cast<size_t>(l)];
                        EXPECT_EQ(chosen.empty(), plan.ffn != FfnKind::moe) << "layer " << l;
                        EXPECT_TRUE(std::is_sorted(chosen.begin(), chosen.end()));
                        for (int32_t e : chosen) EXPECT_TRUE(e >= 0 && e < plan.n_experts);
                        EXPECT_LE(chosen.size(), Session::kRoutedRows * static_cast<size_t>(std::max(plan.top_k, 0)));
                    }
                }
                step_ends[i].push_back(after);
                // No multiple of the boundary strictly inside the chunk [before, after).
                EXPECT_EQ((after - 1) / kBoundary, before[i] / kBoundary)
                    << "steps of " << step_rows << " rows: sequence " << i << " ran " << before[i] << " to " << after;
            }
        }
        for (size_t i = 0; i < sequences.size(); ++i) {
            ASSERT_TRUE(sequences[i].done());
            auto result = sequences[i].take_result();
            ASSERT_TRUE(result.has_value()) << result.error().message;
            EXPECT_EQ(result->tokens, alone[i]) << "steps of " << step_rows << " rows: sequence " << i;
            for (size_t m = kBoundary; m <= requests[i].prompt.size(); m += kBoundary)
                EXPECT_NE(std::find(step_ends[i].begin(), step_ends[i].end(), m), step_ends[i].end())
                    << "steps of " << step_rows << " rows: sequence " << i << " never ended a step at " << m;
        }
    }
}

TEST(ChunkBoundarySettings, NoBoundaryLeavesChunksAsTheBudgetMakesThem) {
    std::unique_ptr<Engine> engine;
    STORMO_OPEN_FIXTURE_OR_SKIP(engine, fixture_dir("qwen3_moe"));
    GenerationRequest g;
    g.prompt = prompt_of(token_source_of("qwen3_moe"), 0, 40);
    g.max_tokens = 1;
    auto session = engine->new_session(64);
    ASSERT_TRUE(session.has_value());
    auto sequence = SequenceGeneration::begin(**session, g);
    ASSERT_TRUE(sequence.has_value());
    BatchScheduler scheduler(engine->pipeline(), BatchSettings{12});
    SequenceGeneration* running[] = {&*sequence};
    scheduler.step(running);
    EXPECT_EQ((*session)->position(), 12u);
    scheduler.step(running);
    EXPECT_EQ((*session)->position(), 24u);  // across 16: no boundary set
}

INSTANTIATE_TEST_SUITE_P(Models, ChunkBoundary, ::testing::Values("gpt_oss", "qwen3_moe", "glm_moe_dsa", "deepseek_v3", "gpt-oss-demo"),
                         [](const auto& param_info) { return test_name_of(param_info.param); });

}  // namespace
}  // namespace stormo::testing
