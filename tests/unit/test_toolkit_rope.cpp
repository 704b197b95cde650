// The toolkit's RoPE against formulas computed here independently (in double) and by hand: YaRN
// inverse frequencies and attention factor, linear scaling, cos/sin tables, the split-half
// rotation, partial rotary dimensions; and the RoPE section of config.json in both dialects
// (transformers 5 `rope_parameters`, the hub's `rope_theta` + `rope_scaling`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "stormo/json.hpp"
#include "stormo/toolkit/config_reader.hpp"
#include "stormo/toolkit/rope.hpp"

namespace stormo::toolkit {
namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

ModelConfig parse_text(const std::string& text, const std::string& name = "test/config.json") {
    auto c = ModelConfig::parse(text, name);
    EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
    return c ? *c : ModelConfig{};
}

// The gpt_oss fixture's RoPE: YaRN, theta 150000, factor 32, truncate false, head_dim 16.
Expected<RopeParams> fixture_rope() {
    const std::string path = std::string(STORMO_TEST_DATA_DIR) + "/fixtures/gpt_oss/config.json";
    return read_rope(parse_text(read_text(path), path));
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

TEST(ToolkitRope, YarnInverseFrequenciesMatchDoubleFormula) {
    auto g = fixture_rope();
    ASSERT_TRUE(g.has_value()) << g.error().message;
    const std::vector<float> got = rope_inv_freq(*g, 16);
    const std::vector<double> want = kFixtureYarn.inv_freq();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_rel_near(got[i], want[i], 1e-6, "inv_freq[" + std::to_string(i) + "]");
    // The ramp really blends: the first frequency is extrapolated, the last interpolated.
    expect_rel_near(got.front(), 1.0, 1e-6, "inv_freq[0]");
    expect_rel_near(got.back(), 1.0 / (32.0 * std::pow(150000.0, 14.0 / 16.0)), 1e-6, "inv_freq[7]");

    expect_rel_near(rope_attention_factor(*g), kFixtureYarn.attention_factor(), 1e-12, "attention factor");
    EXPECT_NEAR(rope_attention_factor(*g), 1.3466, 1e-4);

    // With truncate the ramp bounds are rounded outwards (floor 2, ceil 5 here).
    RopeParams truncated = *g;
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
TEST(ToolkitRope, StandardRopeAndExplicitAttentionFactor) {
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
TEST(ToolkitRope, CosSinTablesAtSeveralPositions) {
    auto g = fixture_rope();
    ASSERT_TRUE(g.has_value()) << g.error().message;
    const std::vector<float> inv = rope_inv_freq(*g, 16);
    const std::vector<double> inv_d = kFixtureYarn.inv_freq();
    const double att = kFixtureYarn.attention_factor();
    const float att_f = static_cast<float>(rope_attention_factor(*g));
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
TEST(ToolkitRope, SplitHalfRotation) {
    // head_dim 4: x1 = (1, 2), x2 = (3, 4).
    float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    const float cos[2] = {0.5f, -0.25f};
    const float sin[2] = {0.75f, 2.0f};
    rope_rotate_split_half(x, cos, sin, 4);
    EXPECT_FLOAT_EQ(x[0], 1.0f * 0.5f - 3.0f * 0.75f);
    EXPECT_FLOAT_EQ(x[1], 2.0f * -0.25f - 4.0f * 2.0f);
    EXPECT_FLOAT_EQ(x[2], 3.0f * 0.5f + 1.0f * 0.75f);
    EXPECT_FLOAT_EQ(x[3], 4.0f * -0.25f + 2.0f * 2.0f);

    // A pure rotation (attention factor 1) keeps each (x1_i, x2_i) pair's length.
    float y[4] = {0.3f, -1.2f, 2.5f, 0.7f};
    const float c[2] = {std::cos(0.4f), std::cos(-2.0f)};
    const float s[2] = {std::sin(0.4f), std::sin(-2.0f)};
    rope_rotate_split_half(y, c, s, 4);
    EXPECT_NEAR(std::hypot(y[0], y[2]), std::hypot(0.3, 2.5), 1e-6);
    EXPECT_NEAR(std::hypot(y[1], y[3]), std::hypot(-1.2, 0.7), 1e-6);
}

TEST(ToolkitRope, LinearScalingDividesTheDefaultFrequencies) {
    RopeParams linear;
    linear.type = RopeType::linear;
    linear.theta = 10000.0;
    linear.factor = 4.0;
    RopeParams plain;
    plain.theta = 10000.0;
    const auto got = rope_inv_freq(linear, 8), base = rope_inv_freq(plain, 8);
    ASSERT_EQ(got.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], base[i] / 4.0f) << i;
    EXPECT_EQ(rope_attention_factor(linear), 1.0);
}

TEST(ToolkitRope, BothDialectsGiveTheSameParameters) {
    const auto v5 = read_rope(parse_text(R"({"rope_parameters": {"rope_type": "yarn", "rope_theta": 150000, "factor": 32.0,
        "original_max_position_embeddings": 4096, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": false}})"));
    const auto hub = read_rope(parse_text(R"({"rope_theta": 150000, "rope_scaling": {"type": "yarn", "factor": 32.0,
        "original_max_position_embeddings": 4096, "truncate": false}})"));
    ASSERT_TRUE(v5.has_value()) << v5.error().message;
    ASSERT_TRUE(hub.has_value()) << hub.error().message;
    EXPECT_EQ(hub->type, v5->type);
    EXPECT_EQ(hub->theta, v5->theta);
    EXPECT_EQ(hub->factor, v5->factor);
    EXPECT_EQ(hub->beta_fast, v5->beta_fast);  // absent: the paper's 32
    EXPECT_EQ(hub->beta_slow, v5->beta_slow);  // absent: the paper's 1
    EXPECT_EQ(rope_inv_freq(*hub, 16), rope_inv_freq(*v5, 16));

    const auto plain = read_rope(parse_text(R"({"rope_theta": 1000000.0, "rope_scaling": null})"));
    ASSERT_TRUE(plain.has_value()) << plain.error().message;
    EXPECT_EQ(plain->type, RopeType::standard);
    const auto linear = read_rope(parse_text(R"({"rope_parameters": {"rope_type": "linear", "rope_theta": 5e5, "factor": 2}})"));
    ASSERT_TRUE(linear.has_value()) << linear.error().message;
    EXPECT_EQ(linear->type, RopeType::linear);
    EXPECT_EQ(linear->factor, 2.0);
}

TEST(ToolkitRope, ConfigProblemsNameTheFileAndField) {
    const auto unknown = read_rope(parse_text(R"({"rope_parameters": {"rope_type": "longrope", "rope_theta": 1e4}})", "m/config.json"));
    ASSERT_FALSE(unknown.has_value());
    EXPECT_EQ(unknown.error().kind, ErrorKind::unsupported);
    EXPECT_NE(unknown.error().message.find("m/config.json: rope_parameters"), std::string::npos) << unknown.error().message;
    EXPECT_NE(unknown.error().message.find("longrope"), std::string::npos) << unknown.error().message;

    const auto no_theta = read_rope(parse_text(R"({"rope_scaling": {"rope_type": "default"}})"));
    ASSERT_FALSE(no_theta.has_value());
    EXPECT_NE(no_theta.error().message.find("rope_theta"), std::string::npos) << no_theta.error().message;

    const auto linear_without_factor = read_rope(parse_text(R"({"rope_theta": 1e4, "rope_scaling": {"type": "linear"}})"));
    ASSERT_FALSE(linear_without_factor.has_value());
    EXPECT_NE(linear_without_factor.error().message.find("factor"), std::string::npos);

    const auto bad_partial = read_rope(parse_text(R"({"rope_theta": 1e4, "partial_rotary_factor": 1.5})"));
    ASSERT_FALSE(bad_partial.has_value());
    EXPECT_NE(bad_partial.error().message.find("partial_rotary_factor"), std::string::npos);
}

TEST(ToolkitRope, PartialRotationTouchesOnlyTheRotaryPart) {
    RopeParams p;
    p.theta = 10000.0;
    const Rope rope(p, 4);  // 4 of each head's 6 values rotate, starting at offset 2
    std::vector<float> x = {9.0f, 8.0f, 1.0f, 2.0f, 3.0f, 4.0f, 7.0f, 6.0f, 1.0f, 2.0f, 3.0f, 4.0f};
    const int64_t position[1] = {3};
    rope.apply(position, x.data(), 12, 2, 6, 2);
    std::vector<float> cos(2), sin(2);
    rope_cos_sin(rope.inv_freq(), 1.0f, 3, cos.data(), sin.data());
    float want[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    rope_rotate_split_half(want, cos.data(), sin.data(), 4);
    for (size_t h = 0; h < 2; ++h)
        for (size_t i = 0; i < 4; ++i) EXPECT_EQ(x[h * 6 + 2 + i], want[i]) << h << " " << i;
    EXPECT_EQ(x[0], 9.0f);
    EXPECT_EQ(x[1], 8.0f);
    EXPECT_EQ(x[6], 7.0f);
    EXPECT_EQ(x[7], 6.0f);
}

}  // namespace
}  // namespace stormo::toolkit
