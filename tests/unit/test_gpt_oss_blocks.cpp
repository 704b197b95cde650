// GPT-OSS building blocks against formulas computed here independently (in double) and by hand:
// YaRN inverse frequencies and attention factor, cos/sin tables, the split-half rotation, the sink
// softmax, the sliding window, the clipped SwiGLU, torch.topk's tie order, and config.json parsing
// in both dialects (transformers 5 `rope_parameters`, hub `rope_theta` + `rope_scaling`); and the
// layout of the intermediates the plugin traces, through the real engine on the gpt_oss fixture.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <span>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "../../plugins/gpt_oss/attention_math.hpp"
#include "../../plugins/gpt_oss/gpt_oss_config.hpp"
#include "../../plugins/gpt_oss/moe_math.hpp"
#include "../../plugins/gpt_oss/yarn_rope.hpp"
#include "oracle_support.hpp"
#include "stormo/kernels.hpp"

namespace stormo::gpt_oss {
namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

ModelConfig fixture_config() {
    const std::string path = std::string(STORMO_TEST_DATA_DIR) + "/fixtures/gpt_oss/config.json";
    auto c = ModelConfig::parse(read_text(path), path);
    EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
    return c ? *c : ModelConfig{};
}

ModelConfig parse_text(const std::string& text, const std::string& name = "test/config.json") {
    auto c = ModelConfig::parse(text, name);
    EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
    return c ? *c : ModelConfig{};
}

// The fixture's dimensions written the way the hub's 2025 config.json files write them.
std::string hub_style_config(const std::string& rope_scaling_extra = "") {
    return R"({
  "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
  "attention_bias": true, "head_dim": 16, "hidden_size": 64, "intermediate_size": 64,
  "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
  "num_attention_heads": 4, "num_hidden_layers": 4, "num_key_value_heads": 2,
  "num_local_experts": 8, "experts_per_token": 2, "rms_norm_eps": 1e-05,
  "rope_theta": 150000,
  "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                   "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false)" +
           rope_scaling_extra + R"(},
  "sliding_window": 16, "swiglu_limit": 7.0, "tie_word_embeddings": false, "vocab_size": 1024
})";
}

// YaRN in double precision, written from the paper's definition as transformers applies it.
struct DoubleYarn {
    double theta, factor, beta_fast, beta_slow, original;
    int dim;
    bool truncate;

    double correction_dim(double rotations) const {
        return dim * std::log(original / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(theta));
    }
    std::vector<double> inv_freq() const {
        double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
        if (truncate) {
            low = std::floor(low);
            high = std::ceil(high);
        }
        low = std::max(low, 0.0);
        high = std::min(high, dim - 1.0);
        std::vector<double> out;
        for (int i = 0; i < dim / 2; ++i) {
            const double pos_freq = std::pow(theta, 2.0 * i / dim);
            const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
            // ramp = 1 -> interpolated (1/(factor*pos)), ramp = 0 -> extrapolated (1/pos).
            out.push_back(ramp / (factor * pos_freq) + (1.0 - ramp) / pos_freq);
        }
        return out;
    }
    double attention_factor() const { return 0.1 * std::log(factor) + 1.0; }
};

const DoubleYarn kFixtureYarn{150000.0, 32.0, 32.0, 1.0, 4096.0, 16, false};

void expect_rel_near(double got, double want, double rel, const std::string& what) {
    EXPECT_LE(std::fabs(got - want), rel * std::fabs(want)) << what << ": got " << got << ", want " << want;
}

TEST(GptOssBlocks, FixtureConfigParsesEveryField) {
    auto g = parse_gpt_oss_config(fixture_config());
    ASSERT_TRUE(g.has_value()) << g.error().message;
    EXPECT_EQ(g->hidden_size, 64);
    EXPECT_EQ(g->intermediate_size, 64);
    EXPECT_EQ(g->n_layers, 4);
    EXPECT_EQ(g->n_heads, 4);
    EXPECT_EQ(g->n_kv_heads, 2);
    EXPECT_EQ(g->head_dim, 16);
    EXPECT_EQ(g->vocab_size, 1024);
    EXPECT_EQ(g->n_experts, 8);
    EXPECT_EQ(g->top_k, 2);
    EXPECT_EQ(g->sliding_window, 16);
    EXPECT_EQ(g->layer_types, (std::vector<AttentionKind>{AttentionKind::sliding, AttentionKind::full,
                                                          AttentionKind::sliding, AttentionKind::full}));
    EXPECT_DOUBLE_EQ(g->swiglu_limit, 7.0);
    EXPECT_DOUBLE_EQ(g->rms_norm_eps, 1e-5);
    EXPECT_TRUE(g->attention_bias);
    EXPECT_FALSE(g->tie_word_embeddings);
    EXPECT_FALSE(g->mxfp4);
    EXPECT_EQ(g->rope.type, RopeType::yarn);
    EXPECT_DOUBLE_EQ(g->rope.theta, 150000.0);
    EXPECT_DOUBLE_EQ(g->rope.factor, 32.0);
    EXPECT_DOUBLE_EQ(g->rope.beta_fast, 32.0);
    EXPECT_DOUBLE_EQ(g->rope.beta_slow, 1.0);
    EXPECT_DOUBLE_EQ(g->rope.original_max_position_embeddings, 4096.0);
    EXPECT_FALSE(g->rope.truncate);
}

TEST(GptOssBlocks, HubDialectGivesTheSameParameters) {
    auto v5 = parse_gpt_oss_config(fixture_config());
    auto hub = parse_gpt_oss_config(parse_text(hub_style_config()));
    ASSERT_TRUE(v5.has_value()) << v5.error().message;
    ASSERT_TRUE(hub.has_value()) << hub.error().message;
    EXPECT_EQ(hub->top_k, v5->top_k);  // from "experts_per_token"
    EXPECT_EQ(hub->n_experts, v5->n_experts);
    EXPECT_EQ(hub->layer_types, v5->layer_types);
    EXPECT_EQ(hub->sliding_window, v5->sliding_window);
    EXPECT_EQ(hub->rope.type, v5->rope.type);
    EXPECT_DOUBLE_EQ(hub->rope.theta, v5->rope.theta);
    EXPECT_DOUBLE_EQ(hub->rope.factor, v5->rope.factor);
    EXPECT_DOUBLE_EQ(hub->rope.beta_fast, v5->rope.beta_fast);
    EXPECT_DOUBLE_EQ(hub->rope.beta_slow, v5->rope.beta_slow);
    EXPECT_DOUBLE_EQ(hub->rope.original_max_position_embeddings, v5->rope.original_max_position_embeddings);
    EXPECT_EQ(hub->rope.truncate, v5->rope.truncate);
    EXPECT_EQ(rope_inv_freq(hub->rope, 16), rope_inv_freq(v5->rope, 16));

    // The older spelling "type" of rope_scaling is read too; truncate defaults to true as in transformers.
    std::string old = hub_style_config();
    old.replace(old.find("\"rope_type\""), std::string("\"rope_type\"").size(), "\"type\"");
    old.replace(old.find(", \"truncate\": false"), std::string(", \"truncate\": false").size(), "");
    auto older = parse_gpt_oss_config(parse_text(old));
    ASSERT_TRUE(older.has_value()) << older.error().message;
    EXPECT_EQ(older->rope.type, RopeType::yarn);
    EXPECT_TRUE(older->rope.truncate);
}

TEST(GptOssBlocks, MissingFieldErrorNamesIt) {
    const std::string full = hub_style_config();
    auto without = [&](const std::string& field_text) {
        std::string t = full;
        const size_t at = t.find(field_text);
        EXPECT_NE(at, std::string::npos) << field_text;
        t.erase(at, field_text.size());
        return parse_gpt_oss_config(parse_text(t));
    };
    auto no_limit = without("\"swiglu_limit\": 7.0, ");
    ASSERT_FALSE(no_limit.has_value());
    EXPECT_NE(no_limit.error().message.find("swiglu_limit"), std::string::npos) << no_limit.error().message;
    EXPECT_EQ(no_limit.error().kind, ErrorKind::missing);

    auto no_original = without("\"original_max_position_embeddings\": 4096, ");
    ASSERT_FALSE(no_original.has_value());
    EXPECT_NE(no_original.error().message.find("original_max_position_embeddings"), std::string::npos)
        << no_original.error().message;
    EXPECT_NE(no_original.error().message.find("rope_scaling"), std::string::npos) << no_original.error().message;

    auto no_top_k = without("\"experts_per_token\": 2, ");
    ASSERT_FALSE(no_top_k.has_value());
    EXPECT_NE(no_top_k.error().message.find("num_experts_per_tok"), std::string::npos) << no_top_k.error().message;

    auto no_head_dim = without("\"head_dim\": 16, ");
    ASSERT_FALSE(no_head_dim.has_value());
    EXPECT_NE(no_head_dim.error().message.find("head_dim"), std::string::npos) << no_head_dim.error().message;

    auto no_theta = without("\"rope_theta\": 150000,");
    ASSERT_FALSE(no_theta.has_value());
    EXPECT_NE(no_theta.error().message.find("rope_theta"), std::string::npos) << no_theta.error().message;

    std::string bad_kind = full;
    bad_kind.replace(bad_kind.find("\"full_attention\""), std::string("\"full_attention\"").size(), "\"chunked\"");
    auto unknown = parse_gpt_oss_config(parse_text(bad_kind));
    ASSERT_FALSE(unknown.has_value());
    EXPECT_NE(unknown.error().message.find("layer_types"), std::string::npos) << unknown.error().message;
}

TEST(GptOssBlocks, QuantizationConfigAndModulesToNotConvert) {
    std::string text = hub_style_config();
    text.insert(text.rfind('}'), R"(, "quantization_config": {"quant_method": "mxfp4",
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                                   "lm_head", "model.layers.3.mlp.experts"]})");
    auto g = parse_gpt_oss_config(parse_text(text));
    ASSERT_TRUE(g.has_value()) << g.error().message;
    EXPECT_TRUE(g->mxfp4);
    EXPECT_TRUE(module_not_converted(*g, "model.layers.0.self_attn"));
    EXPECT_TRUE(module_not_converted(*g, "model.layers.12.mlp.router"));
    EXPECT_TRUE(module_not_converted(*g, "lm_head"));
    EXPECT_FALSE(module_not_converted(*g, "model.layers.0.mlp.experts"));
    EXPECT_TRUE(module_not_converted(*g, "model.layers.3.mlp.experts"));

    std::string other = hub_style_config();
    other.insert(other.rfind('}'), R"(, "quantization_config": {"quant_method": "fp8"})");
    auto unsupported = parse_gpt_oss_config(parse_text(other));
    ASSERT_FALSE(unsupported.has_value());
    EXPECT_NE(unsupported.error().message.find("fp8"), std::string::npos) << unsupported.error().message;
}

TEST(GptOssBlocks, YarnInverseFrequenciesMatchDoubleFormula) {
    auto g = parse_gpt_oss_config(fixture_config());
    ASSERT_TRUE(g.has_value()) << g.error().message;
    const std::vector<float> got = rope_inv_freq(g->rope, static_cast<int>(g->head_dim));
    const std::vector<double> want = kFixtureYarn.inv_freq();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_rel_near(got[i], want[i], 1e-6, "inv_freq[" + std::to_string(i) + "]");
    // The ramp really blends: the first frequency is extrapolated, the last interpolated.
    expect_rel_near(got.front(), 1.0, 1e-6, "inv_freq[0]");
    expect_rel_near(got.back(), 1.0 / (32.0 * std::pow(150000.0, 14.0 / 16.0)), 1e-6, "inv_freq[7]");

    expect_rel_near(rope_attention_factor(g->rope), kFixtureYarn.attention_factor(), 1e-12, "attention factor");
    EXPECT_NEAR(rope_attention_factor(g->rope), 1.3466, 1e-4);

    // With truncate the ramp bounds are rounded outwards (floor 2, ceil 5 here).
    RopeParams truncated = g->rope;
    truncated.truncate = true;
    DoubleYarn want_truncated = kFixtureYarn;
    want_truncated.truncate = true;
    const auto [low, high] = yarn_correction_range(32.0, 1.0, 16, 150000.0, 4096.0, true);
    EXPECT_EQ(low, 2.0);
    EXPECT_EQ(high, 5.0);
    const std::vector<float> got_t = rope_inv_freq(truncated, 16);
    const std::vector<double> want_t = want_truncated.inv_freq();
    for (size_t i = 0; i < got_t.size(); ++i)
        expect_rel_near(got_t[i], want_t[i], 1e-6, "truncated inv_freq[" + std::to_string(i) + "]");
}

TEST(GptOssBlocks, StandardRopeAndExplicitAttentionFactor) {
    RopeParams plain;
    plain.theta = 10000.0;
    const std::vector<float> inv = rope_inv_freq(plain, 8);
    ASSERT_EQ(inv.size(), 4u);
    for (int i = 0; i < 4; ++i) expect_rel_near(inv[i], 1.0 / std::pow(10000.0, 2.0 * i / 8.0), 1e-6, "plain");
    EXPECT_EQ(rope_attention_factor(plain), 1.0);

    RopeParams yarn;
    yarn.type = RopeType::yarn;
    yarn.factor = 4.0;
    yarn.attention_factor = 0.75;
    EXPECT_EQ(rope_attention_factor(yarn), 0.75);
    yarn.attention_factor.reset();
    yarn.mscale = 1.0;
    yarn.mscale_all_dim = 0.5;
    expect_rel_near(rope_attention_factor(yarn), (0.1 * std::log(4.0) + 1.0) / (0.05 * std::log(4.0) + 1.0), 1e-12,
                    "mscale ratio");
}

TEST(GptOssBlocks, CosSinTablesAtSeveralPositions) {
    auto g = parse_gpt_oss_config(fixture_config());
    ASSERT_TRUE(g.has_value()) << g.error().message;
    const std::vector<float> inv = rope_inv_freq(g->rope, 16);
    const std::vector<double> inv_d = kFixtureYarn.inv_freq();
    const double att = kFixtureYarn.attention_factor();
    const float att_f = static_cast<float>(rope_attention_factor(g->rope));
    std::vector<float> cos(8), sin(8);

    rope_cos_sin(inv, att_f, 0, cos.data(), sin.data());
    for (size_t i = 0; i < 8; ++i) {
        EXPECT_FLOAT_EQ(cos[i], att_f);
        EXPECT_EQ(sin[i], 0.0f);
    }
    // Small positions: the whole chain against double within float rounding.
    for (int64_t pos : {1, 3, 7, 15}) {
        rope_cos_sin(inv, att_f, pos, cos.data(), sin.data());
        for (size_t i = 0; i < 8; ++i) {
            const double angle = inv_d[i] * static_cast<double>(pos);
            EXPECT_NEAR(cos[i], std::cos(angle) * att, 2e-6) << "pos " << pos << " i " << i;
            EXPECT_NEAR(sin[i], std::sin(angle) * att, 2e-6) << "pos " << pos << " i " << i;
        }
    }
    // Large positions: the angle is the float32 product position * inv_freq, as torch forms it.
    for (int64_t pos : {1000, 4095, 20000}) {
        rope_cos_sin(inv, att_f, pos, cos.data(), sin.data());
        for (size_t i = 0; i < 8; ++i) {
            const double angle = static_cast<double>(inv[i] * static_cast<float>(pos));
            EXPECT_NEAR(cos[i], std::cos(angle) * att, 2e-6) << "pos " << pos << " i " << i;
            EXPECT_NEAR(sin[i], std::sin(angle) * att, 2e-6) << "pos " << pos << " i " << i;
        }
    }
}

TEST(GptOssBlocks, SplitHalfRotation) {
    // head_dim 4: x1 = (1, 2), x2 = (3, 4).
    float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    const float cos[2] = {0.5f, -0.25f};
    const float sin[2] = {0.75f, 2.0f};
    rope_apply_split_half(x, cos, sin, 4);
    EXPECT_FLOAT_EQ(x[0], 1.0f * 0.5f - 3.0f * 0.75f);
    EXPECT_FLOAT_EQ(x[1], 2.0f * -0.25f - 4.0f * 2.0f);
    EXPECT_FLOAT_EQ(x[2], 3.0f * 0.5f + 1.0f * 0.75f);
    EXPECT_FLOAT_EQ(x[3], 4.0f * -0.25f + 2.0f * 2.0f);

    // A pure rotation (attention factor 1) keeps each (x1_i, x2_i) pair's length.
    float y[4] = {0.3f, -1.2f, 2.5f, 0.7f};
    const float c[2] = {std::cos(0.4f), std::cos(-2.0f)};
    const float s[2] = {std::sin(0.4f), std::sin(-2.0f)};
    rope_apply_split_half(y, c, s, 4);
    EXPECT_NEAR(std::hypot(y[0], y[2]), std::hypot(0.3, 2.5), 1e-6);
    EXPECT_NEAR(std::hypot(y[1], y[3]), std::hypot(-1.2, 0.7), 1e-6);
}

TEST(GptOssBlocks, SinkSoftmax) {
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

TEST(GptOssBlocks, SlidingWindowVisibility) {
    // transformers: key j visible to query i iff j <= i and i - j < window.
    EXPECT_EQ(first_visible_key(0, 16), 0);
    EXPECT_EQ(first_visible_key(15, 16), 0);  // 16 keys: 0..15
    EXPECT_EQ(first_visible_key(16, 16), 1);  // key 0 is 16 away: hidden
    EXPECT_EQ(first_visible_key(40, 16), 25);
    EXPECT_EQ(first_visible_key(40, 0), 0);   // full attention
    EXPECT_EQ(first_visible_key(5, 1), 5);    // a window of 1 sees only itself
}

TEST(GptOssBlocks, ClippedSwigluAtAndBeyondTheClamp) {
    auto expected = [](double gate, double up, double limit) {
        gate = std::min(gate, limit);
        up = std::clamp(up, -limit, limit);
        const double glu = gate / (1.0 + std::exp(-1.702 * gate));
        return (up + 1.0) * glu;
    };
    // Interleaved pairs (gate, up).
    const float gate_up[] = {7.0f, 7.5f, 8.0f, -9.0f, -8.0f, 7.5f, 0.5f, -0.25f, 7.0f, -7.0f};
    float out[5];
    clipped_swiglu(gate_up, 5, 7.0f, out);
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

TEST(GptOssBlocks, TopKFollowsTorchTieOrder) {
    const float logits[] = {1.0f, 3.0f, 3.0f, 2.0f, 3.0f, -1.0f};
    EXPECT_EQ(topk_indices(logits, 6, 2), (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(topk_indices(logits, 6, 4), (std::vector<int32_t>{1, 2, 4, 3}));
    EXPECT_EQ(topk_indices(logits, 6, 6), (std::vector<int32_t>{1, 2, 4, 3, 0, 5}));
    const float equal[] = {0.5f, 0.5f, 0.5f, 0.5f};
    EXPECT_EQ(topk_indices(equal, 4, 3), (std::vector<int32_t>{0, 1, 2}));
    const float distinct[] = {-3.0f, 4.0f, 0.25f, 9.0f, 4.5f};
    EXPECT_EQ(topk_indices(distinct, 5, 3), (std::vector<int32_t>{3, 4, 1}));
}

TEST(GptOssBlocks, RouterWeightsAreSoftmaxOverTheTopK) {
    // The router's second step: softmax over the k selected logits only.
    const float logits[] = {0.1f, 2.0f, -1.0f, 1.0f};
    const std::vector<int32_t> top = topk_indices(logits, 4, 2);
    ASSERT_EQ(top, (std::vector<int32_t>{1, 3}));
    float w[2] = {logits[top[0]], logits[top[1]]};
    reference_kernels().softmax(w, 2);
    EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
    EXPECT_NEAR(w[1], 1.0 / (1.0 + std::exp(1.0)), 1e-6);
}

// Keeps every intermediate the family traces, by (name, layer).
class KeepEverything final : public Tracer {
public:
    struct Record {
        std::vector<float> data;
        size_t rows = 0, width = 0;
        std::vector<int64_t> positions;
    };
    bool wants(int) const override { return true; }
    void record(const std::string& name, int layer, const float* data, size_t n_rows, size_t width,
                std::span<const int64_t> positions) override {
        records[{name, layer}] = Record{std::vector<float>(data, data + n_rows * width), n_rows, width,
                                        std::vector<int64_t>(positions.begin(), positions.end())};
    }
    std::map<std::pair<std::string, int>, Record> records;
};

TEST(GptOssBlocks, TracedIntermediatesHaveTheDocumentedLayout) {
    const std::string dir = stormo::testing::fixture_dir("gpt_oss");
    auto engine = stormo::testing::open_engine(dir, "reference");
    ASSERT_NE(engine, nullptr);
    const std::vector<int32_t> prompt =
        stormo::testing::int_list(*stormo::testing::read_json_file(dir + "/reference/input_ids.json").find("input_ids"));
    ASSERT_GT(prompt.size(), 17u) << "the prompt must outrun the sliding window of 16";
    auto session = engine->new_session(prompt.size());
    ASSERT_TRUE(session.has_value()) << session.error().message;
    KeepEverything tracer;
    ForwardOptions options;
    options.tracer = &tracer;
    ASSERT_TRUE(engine->pipeline().forward(**session, prompt, options).has_value());

    const size_t T = prompt.size(), heads = 4, window = 16, P = T;  // P key columns: positions 0..T-1
    for (int layer : {0, 1}) {  // layer 0 slides, layer 1 is full
        const auto& probs = tracer.records.at({"attn_probs", layer});
        ASSERT_EQ(probs.rows, T);
        ASSERT_EQ(probs.width, heads * (P + 1));
        for (size_t r = 0; r < T; ++r) {
            const size_t first = layer == 0 && r + 1 > window ? r + 1 - window : 0;
            for (size_t h = 0; h < heads; ++h) {
                const float* p = probs.data.data() + r * probs.width + h * (P + 1);
                double sum = p[P];
                EXPECT_GT(p[P], 0.0f) << "sink mass, layer " << layer << " row " << r << " head " << h;
                for (size_t c = 0; c < P; ++c) {
                    sum += p[c];
                    if (c < first || c > r) EXPECT_EQ(p[c], 0.0f) << "layer " << layer << " row " << r << " key " << c;
                    else EXPECT_GT(p[c], 0.0f) << "layer " << layer << " row " << r << " key " << c;
                }
                EXPECT_NEAR(sum, 1.0, 1e-5) << "layer " << layer << " row " << r << " head " << h;
            }
        }
        EXPECT_EQ(tracer.records.at({"q_rope", layer}).width, 64u);
        EXPECT_EQ(tracer.records.at({"k_rope", layer}).width, 32u);
        EXPECT_EQ(tracer.records.at({"attn_in", layer}).width, 64u);
        EXPECT_EQ(tracer.records.at({"attn_context", layer}).width, 64u);
        EXPECT_EQ(tracer.records.at({"attn_out", layer}).width, 64u);
        EXPECT_EQ(tracer.records.at({"router_logits", layer}).width, 8u);
        const auto& idx = tracer.records.at({"router_topk_idx", layer});
        const auto& weight = tracer.records.at({"router_topk_weight", layer});
        const auto& logits = tracer.records.at({"router_logits", layer});
        ASSERT_EQ(weight.width, 2u);
        for (size_t r = 0; r < T; ++r) {
            const float* w = weight.data.data() + 2 * r;
            EXPECT_NEAR(w[0] + w[1], 1.0, 1e-6);
            EXPECT_GE(w[0], w[1]);
            const float* l = logits.data.data() + 8 * r;
            const auto top = topk_indices(l, 8, 2);
            EXPECT_EQ(idx.data[2 * r], static_cast<float>(top[0]));
            EXPECT_EQ(idx.data[2 * r + 1], static_cast<float>(top[1]));
        }
    }
}

}  // namespace
}  // namespace stormo::gpt_oss
