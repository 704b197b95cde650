// The placement invariant: logits bits and tokens are the same for every expert budget (from the
// minimum, top-k slots, to all experts), eviction policy, prefetch on or off, asynchronous compute
// on or off, thread count and O_DIRECT on or off. And a failed or short read fails only that
// request: the session and the store stay consistent and the next request gives the right tokens.
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "oracle_support.hpp"
#include "runtime/generation.hpp"

namespace stormo::testing {
namespace {

struct Placement {
    std::string budget;  // "all", "min", "min+1", "half"
    EvictionPolicy policy = EvictionPolicy::hotness;
    bool prefetch = true;
    bool async = true;
    size_t threads = 2;
    bool direct_io = true;
};

std::string describe(const Placement& p) {
    return "budget=" + p.budget + " policy=" + eviction_policy_name(p.policy) + " prefetch=" + std::to_string(p.prefetch) +
           " async=" + std::to_string(p.async) + " threads=" + std::to_string(p.threads) +
           " direct_io=" + std::to_string(p.direct_io);
}

// Bytes of one slot and the number of experts, read off an engine that streams.
struct StoreShape {
    uint64_t slot_bytes = 0;
    uint64_t top_k = 0;
    uint64_t experts = 0;
};

EngineOptions options_for(const std::string& dir, const Placement& p, const StoreShape& shape) {
    EngineOptions o;
    o.setup.model_dir = dir;
    o.threads = p.threads;
    o.eviction.policy = p.policy;
    o.pipeline.prefetch = p.prefetch;
    o.pipeline.async_compute = p.async;
    o.direct_io = p.direct_io;
    if (p.budget == "all") {
        o.expert_budget.kind = SizeSpec::Kind::all;
    } else {
        uint64_t slots = shape.top_k;
        if (p.budget == "min+1") slots = shape.top_k + 1;
        if (p.budget == "half") slots = shape.experts / 2;
        o.expert_budget.kind = SizeSpec::Kind::bytes;
        o.expert_budget.bytes = slots * shape.slot_bytes;
    }
    return o;
}

struct Outputs {
    std::vector<float> batched;   // all-position logits of one prefill
    std::vector<float> stepped;   // logits of token-by-token decode
    std::vector<int32_t> greedy;  // generated tokens
};

Outputs run_all(Engine& engine, const std::vector<int32_t>& sequence, const std::vector<int32_t>& prompt, size_t gen) {
    Outputs out;
    auto s1 = engine.new_session(sequence.size());
    ForwardOptions all;
    all.all_logits = true;
    auto batched = engine.pipeline().forward(**s1, sequence, all);
    EXPECT_TRUE(batched.has_value()) << batched.error().message;
    if (batched) out.batched = *batched;
    auto s2 = engine.new_session(sequence.size());
    for (int32_t t : sequence) {
        const int32_t one[1] = {t};
        auto step = engine.pipeline().forward(**s2, one, {});
        EXPECT_TRUE(step.has_value()) << step.error().message;
        if (step) out.stepped.insert(out.stepped.end(), step->begin(), step->end());
    }
    auto s3 = engine.new_session(prompt.size() + gen);
    GenerationRequest request;
    request.prompt = prompt;
    request.max_tokens = gen;
    auto result = generate(engine.pipeline(), **s3, request);
    EXPECT_TRUE(result.has_value()) << result.error().message;
    if (result) out.greedy = result->tokens;
    return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class PlacementInvariant : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const bool demo = GetParam().ends_with("-demo");
        const bool gguf = GetParam().ends_with(".gguf");
        // A GGUF file converted from a fixture ("qwen3_moe-q8_0.gguf"): its experts stream from
        // the file's own blocks.
        const std::string fixture = gguf ? GetParam().substr(0, GetParam().find('-')) : GetParam();
        dir_ = demo ? demo_dir(GetParam()) : gguf ? std::string(STORMO_TEST_DATA_DIR) + "/gguf/" + GetParam() : fixture_dir(fixture);
        if (demo) {  // the demos share a character vocabulary: "120+348=468<|end|>..." and "123+456="
            sequence_ = {1, 2, 0, 40, 3, 4, 8, 45, 4, 6, 8, 48, 27, 14, 31, 44, 20, 32, 18, 45};
            prompt_ = {1, 2, 3, 40, 4, 5, 6, 45};
        } else {
            sequence_ = int_list(*read_json_file(fixture_dir(fixture) + "/reference/greedy.json").find("full_sequence"));
            prompt_ = int_list(*read_json_file(fixture_dir(fixture) + "/reference/input_ids.json").find("input_ids"));
        }
        // The store's shape: the total from an all-resident engine, the slot size from one that
        // streams with a budget just under the total.
        EngineOptions probe;
        probe.setup.model_dir = dir_;
        probe.expert_budget.kind = SizeSpec::Kind::all;
        auto resident = Engine::open(probe);
        if (!resident && resident.error().kind == ErrorKind::unsupported) GTEST_SKIP() << resident.error().message;
        ASSERT_TRUE(resident.has_value()) << resident.error().message;
        const int moe_layer = first_moe_layer((*resident)->model());
        ASSERT_GE(moe_layer, 0) << GetParam() << " has no MoE layer";
        const auto& plan = (*resident)->model().layer_plan(moe_layer);
        shape_.top_k = static_cast<uint64_t>(plan.top_k);
        shape_.experts = static_cast<uint64_t>(plan.n_experts);
        probe.expert_budget.kind = SizeSpec::Kind::bytes;
        probe.expert_budget.bytes = (*resident)->store().total_expert_bytes() - 1;
        auto streaming = Engine::open(probe);
        ASSERT_TRUE(streaming.has_value()) << streaming.error().message;
        ASSERT_TRUE((*streaming)->store().streams());
        shape_.slot_bytes = (*streaming)->store().stats().slot_bytes;
        reference_ = run_all(**resident, sequence_, prompt_, 12);
    }

    std::string dir_;
    std::vector<int32_t> sequence_, prompt_;
    StoreShape shape_;
    Outputs reference_;
};

TEST_P(PlacementInvariant, BelowTheMinimumBudgetIsRefusedSayingMinimum) {
    EngineOptions o;
    o.setup.model_dir = dir_;
    o.expert_budget.kind = SizeSpec::Kind::bytes;
    o.expert_budget.bytes = shape_.slot_bytes * shape_.top_k - 1;
    auto e = Engine::open(o);
    ASSERT_FALSE(e.has_value());
    EXPECT_NE(e.error().message.find("minimum"), std::string::npos) << e.error().message;
    EXPECT_NE(e.error().message.find(format_bytes(shape_.slot_bytes * shape_.top_k)), std::string::npos) << e.error().message;
}

TEST_P(PlacementInvariant, EveryPlacementGivesTheSameBitsAndTokens) {
    std::vector<Placement> placements;
    for (const char* budget : {"min", "min+1", "half", "all"})
        for (auto policy : {EvictionPolicy::lru, EvictionPolicy::hotness})
            for (bool prefetch : {true, false})
                for (bool async : {true, false}) placements.push_back({budget, policy, prefetch, async, 2, true});
    for (size_t threads : {1, 3}) placements.push_back({"min", EvictionPolicy::hotness, true, true, threads, true});
    placements.push_back({"min+1", EvictionPolicy::lru, true, true, 1, false});
    placements.push_back({"half", EvictionPolicy::hotness, true, false, 3, false});
    for (const char* budget : {"min", "half"}) placements.push_back({budget, EvictionPolicy::next_use, true, true, 2, true});
    for (const char* budget : {"min", "min+1", "half"}) placements.push_back({budget, EvictionPolicy::adaptive, true, true, 2, true});
    for (const Placement& p : placements) {
        auto engine = Engine::open(options_for(dir_, p, shape_));
        ASSERT_TRUE(engine.has_value()) << describe(p) << ": " << engine.error().message;
        ASSERT_EQ((*engine)->store().streams(), p.budget != "all") << describe(p);
        const Outputs got = run_all(**engine, sequence_, prompt_, 12);
        EXPECT_TRUE(same_bits(got.batched, reference_.batched)) << describe(p) << ": batched prefill logits differ";
        EXPECT_TRUE(same_bits(got.stepped, reference_.stepped)) << describe(p) << ": decode logits differ";
        EXPECT_EQ(got.greedy, reference_.greedy) << describe(p);
        if (p.budget == "min") {
            EXPECT_GT((*engine)->store().stats().misses, 0u) << describe(p);
        }
    }
    EXPECT_TRUE(same_bits(reference_.batched, reference_.stepped)) << "batched prefill differs from decode";
}

// Fails every read from the N-th on, or returns it short, until the count is set high again.
// Failing only the N-th read would race with prefetch: that read can be a speculative one of an
// expert no request acquires, and its failure then rightly costs nothing.
class FaultyBackend final : public ReadBackend {
public:
    FaultyBackend(std::unique_ptr<ReadBackend> inner, std::shared_ptr<std::atomic<int>> fail_at, bool short_read)
        : inner_(std::move(inner)), fail_at_(std::move(fail_at)), short_read_(short_read) {}
    Expected<size_t> read(const std::string& file, uint64_t offset, size_t size, void* dst) override {
        if (fail_at_->fetch_sub(1) <= 1) {
            if (!short_read_) return fail(ErrorKind::io, file + ": injected read failure at offset " + std::to_string(offset));
            auto got = inner_->read(file, offset, size, dst);
            if (!got) return got;
            return *got / 2;  // fewer bytes than the data needs
        }
        return inner_->read(file, offset, size, dst);
    }
    bool direct_io() const override { return inner_->direct_io(); }
    size_t alignment() const override { return inner_->alignment(); }

private:
    std::unique_ptr<ReadBackend> inner_;
    std::shared_ptr<std::atomic<int>> fail_at_;
    bool short_read_;
};

TEST_P(PlacementInvariant, FailedOrShortReadFailsOnlyThatRequest) {
    for (bool short_read : {false, true})
        for (bool prefetch : {false, true}) {
            auto fail_at = std::make_shared<std::atomic<int>>(1 << 30);
            EngineOptions o = options_for(dir_, {"min+1", EvictionPolicy::hotness, prefetch, true, 2, true}, shape_);
            o.wrap_read_backend = [&](std::unique_ptr<ReadBackend> inner) {
                return std::unique_ptr<ReadBackend>(std::make_unique<FaultyBackend>(std::move(inner), fail_at, short_read));
            };
            auto engine = Engine::open(o);
            ASSERT_TRUE(engine.has_value()) << engine.error().message;
            auto session = (*engine)->new_session(prompt_.size() + 12);
            GenerationRequest request;
            request.prompt = prompt_;
            request.max_tokens = 12;
            fail_at->store(3);  // the third read from now, and every one after it, fails
            auto failed = generate((*engine)->pipeline(), **session, request);
            // Reads the failed request left in flight may still fail; the retry starts once they landed.
            for (int waited_ms = 0; (*engine)->store().stats().loading > 0 && waited_ms < 10000; ++waited_ms)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            ASSERT_EQ((*engine)->store().stats().loading, 0u) << "reads still in flight 10 s after the failed request";
            fail_at->store(1 << 30);
            ASSERT_FALSE(failed.has_value()) << "an injected read failure went unnoticed";
            EXPECT_NE(failed.error().message.find(short_read ? "short read" : "injected read failure"), std::string::npos)
                << failed.error().message;
            EXPECT_NE(failed.error().message.find("expert"), std::string::npos) << failed.error().message;
            EXPECT_EQ((*session)->position(), 0u) << "the failed request left positions behind";
            auto again = generate((*engine)->pipeline(), **session, request);
            ASSERT_TRUE(again.has_value()) << again.error().message;
            EXPECT_EQ(again->tokens, reference_.greedy) << "short=" << short_read << " prefetch=" << prefetch;
        }
}

std::vector<std::string> placement_models() {
    std::vector<std::string> models = fixture_and_demo_names();
    // GGUF files whose experts are MXFP4, Q8_0 and F16 blocks of the file, one per family.
    for (const char* f : {"gpt_oss_mxfp4-f16.gguf", "qwen3_moe-q8_0.gguf", "glm_moe_dsa-f16.gguf"}) models.push_back(f);
    return models;
}

INSTANTIATE_TEST_SUITE_P(Models, PlacementInvariant, ::testing::ValuesIn(placement_models()));

}  // namespace
}  // namespace stormo::testing
