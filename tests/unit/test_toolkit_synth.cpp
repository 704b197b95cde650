// The toolkit's pieces for a family's synthetic checkpoints: value ranges, the tensor list's
// bookkeeping (BF16 or FP8 linear layers with their block-scale grid), the JSON pieces and the
// preset lookup.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "stormo/fp8_codes.hpp"
#include "stormo/toolkit/synth.hpp"

namespace stormo::testing {
namespace {

using namespace stormo::toolkit;

TEST(ToolkitSynth, MatrixFillGivesUnitVarianceOutputsAtGainOne) {
    const SynthFillSpec f = matrix_fill(256);
    EXPECT_EQ(f.kind, SynthFill::uniform);
    EXPECT_EQ(f.center, 0.0f);
    // Uniform in +-a has variance a^2 / 3: 1 / fan_in at gain 1.
    EXPECT_NEAR(static_cast<double>(f.half_width) * f.half_width / 3.0, 1.0 / 256.0, 1e-9);
    EXPECT_FLOAT_EQ(matrix_fill(256, kAttentionOutputGain).half_width, 0.25f * f.half_width);
    EXPECT_EQ(norm_fill().center, 1.0f);
}

TEST(ToolkitSynth, LinearLayersAreBf16OrFp8CodesWithTheirBlockScales) {
    std::vector<SynthTensor> t;
    add_linear(t, "a.weight", 300, 256, false);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].dtype, DType::BF16);
    EXPECT_EQ(t[0].shape, (Shape{300, 256}));

    t.clear();
    add_linear(t, "b.weight", 300, 256, true, 0.5);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].dtype, DType::F8_E4M3);
    EXPECT_EQ(t[0].fill.kind, SynthFill::e4m3_codes);
    EXPECT_EQ(t[1].name, "b.weight_scale_inv");
    EXPECT_EQ(t[1].dtype, DType::BF16);
    EXPECT_EQ(t[1].shape, (Shape{3, 2}));  // ceil(300 / 128) x ceil(256 / 128)
    // The scales give the codes' weights an RMS of gain / sqrt(fan_in).
    EXPECT_NEAR(static_cast<double>(t[1].fill.center) * e4m3_gaussian_codes().rms, 0.5 / 16.0, 1e-6);

    // DeepSeek-V3's and Kimi-K2's checkpoints hold their block scales in F32.
    t.clear();
    add_linear(t, "c.weight", 300, 256, true, 0.5, DType::F32);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[1].dtype, DType::F32);
    EXPECT_EQ(t[1].shape, (Shape{3, 2}));
    EXPECT_EQ(t[1].fill.center, fp8_scale_fill(256, 0.5).center);
}

TEST(ToolkitSynth, JsonPiecesAndPresetLookup) {
    EXPECT_EQ(int_list({}), "[]");
    EXPECT_EQ(int_list({1, -2, 3}), "[1, -2, 3]");
    const std::string q = fp8_quantization_config_json();
    EXPECT_NE(q.find("\"quant_method\": \"fp8\""), std::string::npos);
    EXPECT_TRUE(q.ends_with("},\n"));

    struct Preset {
        const char* name;
        int layers;
    };
    const std::vector<Preset> presets = {{"a", 1}, {"b", 2}};
    ASSERT_NE(find_synth_preset(presets, "b"), nullptr);
    EXPECT_EQ(find_synth_preset(presets, "b")->layers, 2);
    EXPECT_EQ(find_synth_preset(presets, "c"), nullptr);
}

}  // namespace
}  // namespace stormo::testing
