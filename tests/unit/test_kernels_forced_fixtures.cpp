// The whole fixture suite (every fixture under tests/data/fixtures) with each kernels choice forced (the reference, avx2, vnni), so
// a plugin's kernels are checked where they matter: logits within the oracle tolerance of
// transformers, router top-k and greedy tokens identical, batched prefill equal to token-by-token
// decode in bits, and the logits' bits independent of the thread count. A plugin this CPU cannot
// run is skipped, saying why.
#include <cstring>

#include "kernel_test_support.hpp"
#include "oracle_support.hpp"
#include "runtime/generation.hpp"

namespace stormo::testing {
namespace {

struct ForcedCase {
    std::string fixture;
    std::string kernels;
};

void PrintTo(const ForcedCase& c, std::ostream* os) { *os << c.fixture << "/" << c.kernels; }

std::string forced_name(const ::testing::TestParamInfo<ForcedCase>& info) {
    return info.param.fixture + "_" + info.param.kernels;
}

// The oracle test's tolerance (test_gpt_oss_oracle.cpp): max |error| / max |reference logit|.
constexpr double kLogitTolerance = 2e-5;

class ForcedKernels : public ::testing::TestWithParam<ForcedCase> {
protected:
    void SetUp() override {
        if (const std::string why = kernels_unusable_reason(GetParam().kernels); !why.empty())
            GTEST_SKIP() << why << ": the " << GetParam().kernels << " kernels cannot run here";
        dir_ = fixture_dir(GetParam().fixture);
        STORMO_OPEN_FIXTURE_OR_SKIP(engine_, dir_, GetParam().kernels, 2);
        ASSERT_EQ(engine_->kernels_name(), GetParam().kernels);
        const Json greedy = read_json_file(dir_ + "/reference/greedy.json");
        sequence_ = int_list(*greedy.find("full_sequence"));
        generated_ = int_list(*greedy.find("generated"));
        prompt_ = int_list(*read_json_file(dir_ + "/reference/input_ids.json").find("input_ids"));
    }

    Expected<std::vector<float>> all_logits(Engine& engine, RoutingRecorder* routing) {
        auto session = engine.new_session(sequence_.size());
        if (!session) return tl::unexpected(session.error());
        ForwardOptions options;
        options.all_logits = true;
        options.tracer = routing;
        return engine.pipeline().forward(**session, sequence_, options);
    }

    std::string dir_;
    std::unique_ptr<Engine> engine_;
    std::vector<int32_t> prompt_, generated_, sequence_;
};

TEST_P(ForcedKernels, LogitsAndRoutingMatchTransformers) {
    RoutingRecorder routing;
    auto logits = all_logits(*engine_, &routing);
    ASSERT_TRUE(logits.has_value()) << logits.error().message;
    const ErrorStats e = compare(*logits, read_reference(dir_ + "/reference/logits.npy").floats());
    std::printf("[ %s forced %s ] logits max abs error %.3g, relative %.3g (tolerance %.0e)\n",
                GetParam().fixture.c_str(), GetParam().kernels.c_str(), e.max_abs, e.relative(), kLogitTolerance);
    EXPECT_LE(e.relative(), kLogitTolerance);

    EXPECT_EQ(router_topk_mismatches(engine_->model(), routing,
                                     read_reference(dir_ + "/reference/router_topk_idx.npy")), 0u)
        << "router top-k differs from transformers";
    if (const std::string dsa = dir_ + "/reference/dsa_topk_idx.npy"; std::filesystem::exists(dsa)) {
        size_t dropping = 0;
        EXPECT_EQ(dsa_mismatches(routing, read_reference(dsa), dropping), 0u) << "DSA indexer positions differ";
    }
}

TEST_P(ForcedKernels, GreedyTokensMatchTransformers) {
    auto session = engine_->new_session(prompt_.size() + generated_.size());
    ASSERT_TRUE(session.has_value()) << session.error().message;
    GenerationRequest request;
    request.prompt = prompt_;
    request.max_tokens = generated_.size();
    auto result = generate(engine_->pipeline(), **session, request);
    ASSERT_TRUE(result.has_value()) << result.error().message;
    EXPECT_EQ(result->tokens, generated_);
}

TEST_P(ForcedKernels, BatchedPrefillEqualsTokenByTokenBits) {
    auto batched = all_logits(*engine_, nullptr);
    ASSERT_TRUE(batched.has_value()) << batched.error().message;
    auto session = engine_->new_session(sequence_.size());
    ASSERT_TRUE(session.has_value());
    std::vector<float> stepped;
    for (int32_t token : sequence_) {
        const int32_t one[1] = {token};
        auto step = engine_->pipeline().forward(**session, one, ForwardOptions{});
        ASSERT_TRUE(step.has_value()) << step.error().message;
        stepped.insert(stepped.end(), step->begin(), step->end());
    }
    ASSERT_EQ(batched->size(), stepped.size());
    EXPECT_EQ(std::memcmp(batched->data(), stepped.data(), stepped.size() * sizeof(float)), 0);
}

TEST_P(ForcedKernels, LogitBitsDoNotDependOnTheThreadCount) {
    auto two = all_logits(*engine_, nullptr);
    ASSERT_TRUE(two.has_value()) << two.error().message;
    for (size_t threads : {size_t{1}, size_t{3}}) {
        auto engine = open_engine(dir_, GetParam().kernels, threads);
        ASSERT_NE(engine, nullptr);
        auto other = all_logits(*engine, nullptr);
        ASSERT_TRUE(other.has_value()) << other.error().message;
        ASSERT_EQ(other->size(), two->size());
        EXPECT_EQ(std::memcmp(other->data(), two->data(), two->size() * sizeof(float)), 0) << threads << " threads";
    }
}

std::vector<ForcedCase> forced_cases() {
    std::vector<ForcedCase> cases;
    for (const std::string& f : fixture_names())
        for (const char* kernels : {"reference", "avx2", "vnni"}) cases.push_back({f, kernels});
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ForcedKernels, ::testing::ValuesIn(forced_cases()), forced_name);

// Each demo model's 200 public problems with each plugin forced: transformers' ids every time.
struct DemoCase {
    std::string demo;
    std::string kernels;
};
void PrintTo(const DemoCase& c, std::ostream* os) { *os << c.demo << "/" << c.kernels; }

class ForcedDemo : public ::testing::TestWithParam<DemoCase> {};

TEST_P(ForcedDemo, AllPublicProblemsGiveTransformersIds) {
    if (const std::string why = kernels_unusable_reason(GetParam().kernels); !why.empty())
        GTEST_SKIP() << why << ": the " << GetParam().kernels << " kernels cannot run here";
    const std::string dir = demo_dir(GetParam().demo);
    auto engine = open_engine(dir, GetParam().kernels, 2);
    ASSERT_NE(engine, nullptr);
    const DemoAgreement a = run_demo_eval(*engine, dir);
    std::printf("[ %s forced %s ] %zu/%zu problems give transformers' ids\n", GetParam().demo.c_str(),
                GetParam().kernels.c_str(), a.agree, a.total);
    EXPECT_EQ(a.total, 200u);
    EXPECT_EQ(a.agree, a.total);
}

std::vector<DemoCase> demo_cases() {
    std::vector<DemoCase> cases;
    for (const std::string& d : demo_names())
        for (const char* k : {"reference", "avx2", "vnni"}) cases.push_back({d, k});
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Kernels, ForcedDemo, ::testing::ValuesIn(demo_cases()), [](const auto& i) {
    std::string name = i.param.demo + "_" + i.param.kernels;
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
});

}  // namespace
}  // namespace stormo::testing
