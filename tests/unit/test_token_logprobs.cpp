// The logprobs a server reports: the log-softmax of the raw logits over the whole vocabulary, in
// double, checked against the textbook formula; the top list in order, ties to the lower id; and
// a generation that reports them picks the same tokens as one that does not.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/token_logprobs.hpp"

namespace stormo {
namespace {

// log(exp(x_i) / sum_j exp(x_j)) with the sum in long double: the reference, computed another way.
std::vector<double> reference_log_softmax(const std::vector<float>& logits) {
    long double largest = logits[0];
    for (const float x : logits) largest = std::max<long double>(largest, x);
    long double sum = 0;
    for (const float x : logits) sum += std::exp(static_cast<long double>(x) - largest);
    std::vector<double> out;
    for (const float x : logits) out.push_back(static_cast<double>(static_cast<long double>(x) - largest - std::log(sum)));
    return out;
}

std::vector<float> random_logits(size_t n, uint64_t seed, float scale) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> out(n);
    for (float& x : out) x = dist(rng);
    return out;
}

TEST(TokenLogprobs, AreTheLogSoftmaxOfTheRawLogitsInDouble) {
    for (const float scale : {0.1f, 3.0f, 40.0f}) {
        const std::vector<float> logits = random_logits(50000, 7, scale);
        const std::vector<double> reference = reference_log_softmax(logits);
        for (const int32_t chosen : {0, 123, 49999}) {
            const TokenLogprobs got = token_logprobs(logits, chosen, 20);
            EXPECT_EQ(got.chosen.id, chosen);
            // Within a few units in the last place of double: float logits, double arithmetic.
            EXPECT_NEAR(got.chosen.logprob, reference[static_cast<size_t>(chosen)], 1e-12 * (1 + std::abs(reference[static_cast<size_t>(chosen)])))
                << "scale " << scale;
            ASSERT_EQ(got.top.size(), 20u);
            for (const TokenLogprob& t : got.top)
                EXPECT_NEAR(t.logprob, reference[static_cast<size_t>(t.id)], 1e-12 * (1 + std::abs(t.logprob)));
        }
    }
}

TEST(TokenLogprobs, TopIsMostLikelyFirstAndTiesGoToTheLowerId) {
    const std::vector<float> logits = {1.0f, 5.0f, 3.0f, 5.0f, -2.0f, 3.0f};
    const TokenLogprobs got = token_logprobs(logits, 4, 4);
    ASSERT_EQ(got.top.size(), 4u);
    EXPECT_EQ(got.top[0].id, 1);
    EXPECT_EQ(got.top[1].id, 3);
    EXPECT_EQ(got.top[2].id, 2);
    EXPECT_EQ(got.top[3].id, 5);
    EXPECT_EQ(got.top[0].logprob, got.top[1].logprob);
    // The probabilities of the whole row sum to one.
    double total = 0;
    for (size_t id = 0; id < logits.size(); ++id) total += std::exp(token_logprobs(logits, static_cast<int32_t>(id), 0).chosen.logprob);
    EXPECT_NEAR(total, 1.0, 1e-15);
    EXPECT_TRUE(token_logprobs(logits, 0, 0).top.empty());
    EXPECT_EQ(token_logprobs(logits, 0, 100).top.size(), logits.size());  // no more than the vocabulary
}

TEST(TokenLogprobs, HugeLogitsDoNotOverflowAndMinusInfinityIsNoProbability) {
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> logits = {1e30f, 1e30f, -inf, 0.0f};
    const TokenLogprobs got = token_logprobs(logits, 0, 4);
    EXPECT_NEAR(got.chosen.logprob, -std::log(2.0), 1e-15);
    EXPECT_EQ(token_logprobs(logits, 2, 0).chosen.logprob, -std::numeric_limits<double>::infinity());
    EXPECT_EQ(got.top[3].id, 2);  // -inf ranks last
}

}  // namespace
}  // namespace stormo
