// The toolkit's attention, router and activation pieces against hand-computed values: the sink
// softmax, sliding-window visibility, torch.topk's tie order, the three router rules (GPT-OSS's
// top-k-then-softmax, Qwen3's softmax-then-top-k with and without renormalisation, GLM's sigmoid
// with correction bias and group limits), plain and clamped SwiGLU, and the config reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "stormo/kernels.hpp"
#include "stormo/toolkit/attention.hpp"
#include "stormo/toolkit/config_reader.hpp"
#include "stormo/toolkit/router.hpp"
#include "stormo/toolkit/swiglu.hpp"

namespace stormo::toolkit {
namespace {

TEST(ToolkitMath, SinkSoftmax) {
    const SoftmaxFn softmax = reference_kernels().softmax;
    ASSERT_NE(softmax, nullptr);

    // Hand-computed 3-key case: scores 1, 2, 3 and sink 0.5.
    float logits[4] = {1.0f, 2.0f, 3.0f, 0.0f};
    const float sink_mass = softmax_with_sink(logits, 3, 0.5f, softmax);
    const double denom = std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(0.5);
    EXPECT_NEAR(logits[0], std::exp(1.0) / denom, 1e-6);
    EXPECT_NEAR(logits[1], std::exp(2.0) / denom, 1e-6);
    EXPECT_NEAR(logits[2], std::exp(3.0) / denom, 1e-6);
    EXPECT_NEAR(sink_mass, std::exp(0.5) / denom, 1e-6);
    EXPECT_NEAR(logits[0] + logits[1] + logits[2] + sink_mass, 1.0, 1e-6);
    // The keys alone no longer sum to 1: the sink took its share.
    EXPECT_LT(logits[0] + logits[1] + logits[2], 0.95f);

    // A huge sink takes nearly all the mass (and is the max that is subtracted).
    float big[3] = {2.0f, -1.0f, 0.0f};
    const float big_mass = softmax_with_sink(big, 2, 40.0f, softmax);
    EXPECT_GT(big_mass, 1.0f - 1e-6f);
    EXPECT_LT(big[0], 1e-15f);
    EXPECT_GE(big[1], 0.0f);

    // A very negative sink takes nothing: the keys get the plain softmax.
    float none[3] = {0.0f, std::log(3.0f), 0.0f};
    const float none_mass = softmax_with_sink(none, 2, -1e4f, softmax);
    EXPECT_EQ(none_mass, 0.0f);
    EXPECT_NEAR(none[0], 0.25, 1e-6);
    EXPECT_NEAR(none[1], 0.75, 1e-6);
}
TEST(ToolkitMath, SlidingWindowVisibility) {
    // transformers: key j visible to query i iff j <= i and i - j < window.
    EXPECT_EQ(first_visible_key(0, 16), 0);
    EXPECT_EQ(first_visible_key(15, 16), 0);  // 16 keys: 0..15
    EXPECT_EQ(first_visible_key(16, 16), 1);  // key 0 is 16 away: hidden
    EXPECT_EQ(first_visible_key(40, 16), 25);
    EXPECT_EQ(first_visible_key(40, 0), 0);   // full attention
    EXPECT_EQ(first_visible_key(5, 1), 5);    // a window of 1 sees only itself
}
TEST(ToolkitMath, ClippedSwigluAtAndBeyondTheClamp) {
    auto expected = [](double gate, double up, double limit) {
        gate = std::min(gate, limit);
        up = std::clamp(up, -limit, limit);
        const double glu = gate / (1.0 + std::exp(-1.702 * gate));
        return (up + 1.0) * glu;
    };
    // Interleaved pairs (gate, up).
    const float gate_up[] = {7.0f, 7.5f, 8.0f, -9.0f, -8.0f, 7.5f, 0.5f, -0.25f, 7.0f, -7.0f};
    float out[5];
    clamped_swiglu_interleaved(gate_up, 5, 7.0f, 1.702f, out);
    // gate 7 (at the clamp), up 7.5 -> 7: 8 * 7 * sigmoid(11.914)
    EXPECT_NEAR(out[0], expected(7.0, 7.0, 7.0), 1e-5);
    EXPECT_NEAR(out[0], 8.0 * 7.0 / (1.0 + std::exp(-11.914)), 1e-5);
    // gate 8 -> 7, up -9 -> -7: -6 * 7 * sigmoid(11.914)
    EXPECT_NEAR(out[1], -6.0 * 7.0 / (1.0 + std::exp(-11.914)), 1e-5);
    // gate -8 is not clamped below; up 7.5 -> 7: 8 * (-8) * sigmoid(-13.616)
    EXPECT_NEAR(out[2], 8.0 * -8.0 / (1.0 + std::exp(13.616)), 1e-9);
    EXPECT_NEAR(out[2], expected(-8.0, 7.5, 7.0), 1e-9);
    // Inside the clamp nothing changes.
    EXPECT_NEAR(out[3], expected(0.5, -0.25, 7.0), 1e-7);
    // up = -limit gives (1 - 7) * glu.
    EXPECT_NEAR(out[4], expected(7.0, -7.0, 7.0), 1e-5);
}
TEST(ToolkitMath, TopKFollowsTorchTieOrder) {
    const float logits[] = {1.0f, 3.0f, 3.0f, 2.0f, 3.0f, -1.0f};
    EXPECT_EQ(topk_indices(logits, 6, 2), (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(topk_indices(logits, 6, 4), (std::vector<int32_t>{1, 2, 4, 3}));
    EXPECT_EQ(topk_indices(logits, 6, 6), (std::vector<int32_t>{1, 2, 4, 3, 0, 5}));
    const float equal[] = {0.5f, 0.5f, 0.5f, 0.5f};
    EXPECT_EQ(topk_indices(equal, 4, 3), (std::vector<int32_t>{0, 1, 2}));
    const float distinct[] = {-3.0f, 4.0f, 0.25f, 9.0f, 4.5f};
    EXPECT_EQ(topk_indices(distinct, 5, 3), (std::vector<int32_t>{3, 4, 1}));
}
TEST(ToolkitMath, RouterWeightsAreSoftmaxOverTheTopK) {
    // The router's second step: softmax over the k selected logits only.
    const float logits[] = {0.1f, 2.0f, -1.0f, 1.0f};
    const std::vector<int32_t> top = topk_indices(logits, 4, 2);
    ASSERT_EQ(top, (std::vector<int32_t>{1, 3}));
    float w[2] = {logits[top[0]], logits[top[1]]};
    reference_kernels().softmax(w, 2);
    EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
    EXPECT_NEAR(w[1], 1.0 / (1.0 + std::exp(1.0)), 1e-6);
}

TEST(ToolkitMath, SoftmaxThenTopKWithAndWithoutRenormalisation) {
    const float logits[] = {0.5f, 2.0f, -1.0f, 1.5f};
    double denom = 0;
    for (float l : logits) denom += std::exp(static_cast<double>(l));
    int32_t ids[2];
    float w[2];
    select_softmax_then_topk(logits, 4, 2, false, reference_kernels().softmax, ids, w);
    EXPECT_EQ(ids[0], 1);
    EXPECT_EQ(ids[1], 3);
    EXPECT_NEAR(w[0], std::exp(2.0) / denom, 1e-6);
    EXPECT_NEAR(w[1], std::exp(1.5) / denom, 1e-6);
    select_softmax_then_topk(logits, 4, 2, true, reference_kernels().softmax, ids, w);
    EXPECT_NEAR(w[0], std::exp(2.0) / (std::exp(2.0) + std::exp(1.5)), 1e-6);
    EXPECT_NEAR(w[0] + w[1], 1.0, 1e-6);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(ToolkitMath, SigmoidRouterChoosesWithTheBiasAndWeighsWithoutIt) {
    // Expert 2 has the best plain score, but the correction bias makes 0 and 3 the choice.
    const float logits[] = {0.0f, -1.0f, 2.0f, 0.5f};
    RouterSpec spec;
    spec.rule = RouterRule::sigmoid_grouped;
    spec.top_k = 2;
    spec.renormalize = true;
    spec.scaling = 2.5f;
    const std::vector<float> correction = {1.0f, 0.0f, -1.0f, 0.6f};
    int32_t ids[2];
    float w[2];
    select_sigmoid_grouped(logits, 4, spec, correction, ids, w);
    // choice scores: 0.5 + 1 = 1.5, 0.269, 0.881 - 1 = -0.119, 0.622 + 0.6 = 1.222: experts 0 and 3,
    // listed by their weights (sigmoid 0.5 < 0.622): 3 first.
    EXPECT_EQ(ids[0], 3);
    EXPECT_EQ(ids[1], 0);
    const double s0 = sigmoid(0.0), s3 = sigmoid(0.5);
    EXPECT_NEAR(w[0], s3 / (s0 + s3) * 2.5, 1e-6);
    EXPECT_NEAR(w[1], s0 / (s0 + s3) * 2.5, 1e-6);
}

TEST(ToolkitMath, SigmoidRouterKeepsOnlyTheBestGroups) {
    // Two groups of three: group 0 holds the single best expert, group 1 the best pair sum.
    const float logits[] = {3.0f, -4.0f, -4.0f, 1.5f, 1.5f, 1.0f};
    RouterSpec spec;
    spec.rule = RouterRule::sigmoid_grouped;
    spec.top_k = 2;
    spec.n_group = 2;
    spec.topk_group = 1;
    spec.renormalize = false;
    int32_t ids[2];
    float w[2];
    select_sigmoid_grouped(logits, 6, spec, {}, ids, w);
    // group 0: sigmoid(3) + sigmoid(-4) = 0.9526 + 0.0180 = 0.971; group 1: 0.8176 + 0.8176 = 1.635.
    EXPECT_EQ(ids[0], 3);
    EXPECT_EQ(ids[1], 4);
    EXPECT_NEAR(w[0], sigmoid(1.5), 1e-6);
    // Without group limits expert 0 wins.
    spec.n_group = 1;
    select_sigmoid_grouped(logits, 6, spec, {}, ids, w);
    EXPECT_EQ(ids[0], 0);
    EXPECT_NEAR(w[0], sigmoid(3.0), 1e-6);
}

TEST(ToolkitMath, PlainSwiglu) {
    const float gate[] = {-2.0f, 0.0f, 1.5f};
    const float up[] = {3.0f, 5.0f, -0.5f};
    float out[3] = {gate[0], gate[1], gate[2]};
    swiglu(out, up, 3, reference_kernels().silu);
    for (int i = 0; i < 3; ++i) {
        EXPECT_NEAR(out[i], gate[i] * sigmoid(gate[i]) * up[i], 1e-6) << i;
        EXPECT_EQ(out[i], (gate[i] / (1.0f + std::exp(-gate[i]))) * up[i]) << "torch's order, " << i;
    }
}

TEST(ToolkitConfigReader, KeepsTheFirstProblemAndNamesFileAndField) {
    auto c = ModelConfig::parse(R"({"hidden_size": 64, "num_experts": 8, "head_dim": 0, "vocab_size": "x"})",
                                "dir/config.json");
    ASSERT_TRUE(c.has_value());
    ConfigReader r(*c);
    EXPECT_EQ(r.positive("hidden_size"), 64);
    EXPECT_EQ(r.positive_any({"num_local_experts", "num_experts"}), 8);  // the hub's spelling
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.positive("head_dim"), 0);
    EXPECT_FALSE(r.ok());
    r.positive("vocab_size");  // a later problem does not replace the first
    r.positive("missing_field");
    ASSERT_FALSE(r.status().has_value());
    EXPECT_EQ(r.status().error().message, "dir/config.json: field \"head_dim\" must be positive, found 0");
    EXPECT_EQ(r.integers_read(), (std::vector<std::pair<std::string, int64_t>>{{"hidden_size", 64}, {"num_experts", 8}}));

    ConfigReader none(*c);
    none.positive_any({"num_experts_per_tok", "experts_per_token"});
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.status().error().kind, ErrorKind::missing);
    EXPECT_NE(none.status().error().message.find("\"num_experts_per_tok\", \"experts_per_token\""), std::string::npos);

    ConfigReader rules(*c);
    EXPECT_EQ(rules.integer_or("decoder_sparse_step", 1, 1), 1);  // absent: the fallback
    EXPECT_FALSE(rules.boolean_or("tie_word_embeddings", false));
    rules.require(false, "num_experts_per_tok (9) exceeds the number of experts (8)");
    EXPECT_EQ(rules.status().error().message, "dir/config.json: num_experts_per_tok (9) exceeds the number of experts (8)");
}

TEST(ToolkitConfigReader, ModulesToNotConvertGlobs) {
    const std::vector<std::string> patterns = {"model.layers.*.self_attn", "lm_head", "model.layers.3.mlp.experts"};
    EXPECT_TRUE(module_listed(patterns, "model.layers.0.self_attn"));
    EXPECT_TRUE(module_listed(patterns, "lm_head"));
    EXPECT_FALSE(module_listed(patterns, "model.layers.0.mlp.experts"));
    EXPECT_TRUE(module_listed(patterns, "model.layers.3.mlp.experts"));
}

}  // namespace
}  // namespace stormo::toolkit
