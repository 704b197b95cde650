// Sampling: greedy ties, top-k, top-p, min-p, temperature, seed reproducibility, repetition penalty.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "runtime/sampler.hpp"

namespace stormo {
namespace {

std::map<int32_t, int> histogram(SamplingParams p, const std::vector<float>& logits, int draws) {
    Sampler s(p);
    std::map<int32_t, int> h;
    for (int i = 0; i < draws; ++i) ++h[s.sample(logits, {})];
    return h;
}

TEST(Sampler, GreedyTakesTheLargestAndTheLowestIdOnTies) {
    Sampler s(SamplingParams{});
    EXPECT_EQ(s.sample(std::vector<float>{0.5f, 2.0f, -1.0f, 2.0f}, {}), 1);
    EXPECT_EQ(argmax(std::vector<float>{-3.0f, -3.0f}), 0);
}

TEST(Sampler, TopKKeepsOnlyTheKMostLikely) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.top_k = 2;
    p.seed = 7;
    const auto h = histogram(p, {0.0f, 3.0f, 2.9f, 2.8f, -5.0f}, 2000);
    for (const auto& [id, n] : h) EXPECT_TRUE(id == 1 || id == 2) << "drew id " << id << " outside the top 2";
    EXPECT_GT(h.at(1), 0);
    EXPECT_GT(h.at(2), 0);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.top_p = 0.5f;  // probabilities ~0.665, 0.245, 0.09: the first alone reaches 0.5
    p.seed = 3;
    const auto h = histogram(p, {2.0f, 1.0f, 0.0f}, 500);
    EXPECT_EQ(h.size(), 1u);
    EXPECT_EQ(h.begin()->first, 0);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheTop) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.min_p = 0.3f;  // relative probabilities 1, e^-1 = 0.37, e^-2 = 0.14: the third goes
    p.seed = 11;
    const auto h = histogram(p, {2.0f, 1.0f, 0.0f}, 3000);
    EXPECT_EQ(h.count(2), 0u);
    EXPECT_GT(h.at(0), h.at(1));
}

TEST(Sampler, SameSeedSameDrawsDifferentSeedDifferentDraws) {
    SamplingParams p;
    p.temperature = 1.5f;
    const std::vector<float> logits{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
    auto draws = [&](uint64_t seed) {
        p.seed = seed;
        Sampler s(p);
        std::vector<int32_t> out;
        for (int i = 0; i < 64; ++i) out.push_back(s.sample(logits, {}));
        return out;
    };
    EXPECT_EQ(draws(42), draws(42));
    EXPECT_NE(draws(42), draws(43));
}

TEST(Sampler, LowTemperatureApproachesGreedyHighTemperatureSpreads) {
    SamplingParams p;
    p.temperature = 0.01f;
    EXPECT_EQ(histogram(p, {1.0f, 1.5f, 0.5f}, 200).size(), 1u);
    p.temperature = 5.0f;
    EXPECT_EQ(histogram(p, {1.0f, 1.5f, 0.5f}, 2000).size(), 3u);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
    SamplingParams p;
    p.repetition_penalty = 2.0f;
    Sampler s(p);
    // id 0 (3.0) was seen: 3.0 / 2 = 1.5 < 2.0, so id 1 wins.
    EXPECT_EQ(s.sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0}), 1);
    // negative logits grow more negative: id 0 (-1 -> -2) loses to id 1 (-1.5).
    EXPECT_EQ(s.sample(std::vector<float>{-1.0f, -1.5f}, std::vector<int32_t>{0}), 1);
    // outside the window the penalty does not apply
    p.repetition_window = 1;
    Sampler windowed(p);
    EXPECT_EQ(windowed.sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0, 1}), 0);
}

TEST(Sampler, InvalidParametersAreRefusedNamingTheOption) {
    SamplingParams p;
    p.top_p = 0.0f;
    ASSERT_FALSE(validate(p).has_value());
    EXPECT_NE(validate(p).error().message.find("--top-p"), std::string::npos);
    p = {};
    p.temperature = -1.0f;
    EXPECT_NE(validate(p).error().message.find("--temperature"), std::string::npos);
    p = {};
    p.min_p = 1.0f;
    EXPECT_NE(validate(p).error().message.find("--min-p"), std::string::npos);
}

}  // namespace
}  // namespace stormo
