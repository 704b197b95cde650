// FP8 checkpoints as shipped (Qwen3-30B-A3B-FP8's layout): the test makes an FP8 copy of the
// qwen3_moe fixture itself (e4m3 rounding to nearest, ties to even; one scale per block of
// weight_block_size, here [24, 40] so the fixture's 64- and 32-wide matrices end in partial blocks;
// F32 scales for attention, BF16 for experts) and an F32 copy holding the dequantized values, and
// requires the same logits bits from both, resident or streamed. Malformed scales are refused by
// name.
#include <algorithm>
#include <cmath>
#include <limits>

#include "qwen3_fixture.hpp"
#include "stormo/dtype.hpp"

namespace stormo::qwen3_moe {
namespace {

using namespace fixture;  // the qwen3_moe fixture (qwen3_fixture.hpp)

constexpr int64_t kBlockRows = 24, kBlockCols = 40;

bool quantized(const std::string& name) {
    return name.find(".self_attn.") != std::string::npos ? name.ends_with("_proj.weight")
                                                         : name.find(".mlp.experts.") != std::string::npos;
}

using testing::Fp8Copies;
using testing::widen;
Fp8Copies make_copies() { return testing::make_fp8_copies("qwen3_moe", quantized, kBlockRows, kBlockCols); }

std::string fp8_config() {
    std::string text = fixture_config_text();
    replace_once(text, "\"architectures\"",
                 "\"quantization_config\": {\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", \"activation_scheme\": "
                 "\"dynamic\", \"weight_block_size\": [24, 40]},\n  \"architectures\"");
    return text;
}

class Qwen3MoeFp8 : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        copies_ = new Fp8Copies(make_copies());
        fp8_dir_ = new test::TempDir();
        f32_dir_ = new test::TempDir();
        write_model(*fp8_dir_, fp8_config(), copies_->fp8);
        write_model(*f32_dir_, fixture_config_text(), copies_->dequantized);
    }
    static void TearDownTestSuite() {
        delete fp8_dir_;
        delete f32_dir_;
        delete copies_;
    }
    static Fp8Copies* copies_;
    static test::TempDir* fp8_dir_;
    static test::TempDir* f32_dir_;
};
Fp8Copies* Qwen3MoeFp8::copies_ = nullptr;
test::TempDir* Qwen3MoeFp8::fp8_dir_ = nullptr;
test::TempDir* Qwen3MoeFp8::f32_dir_ = nullptr;

TEST_F(Qwen3MoeFp8, SameLogitsBitsAsTheDequantizedF32Checkpoint) {
    const std::vector<int32_t> ids = fixture_sequence();
    const std::vector<float> fp8 = all_logits(fp8_dir_->path(), ids);
    EXPECT_TRUE(same_bits(fp8, all_logits(f32_dir_->path(), ids)));
}

// The kernels plugins' FP8 matmuls (every weight the reference's float, sums in their own order)
// on the whole model: each logit within a float-reordering distance of the reference kernels'
// logits on the dequantized F32 copy, and the same argmax at every position.
TEST_F(Qwen3MoeFp8, KernelsPluginsGiveTheReferenceLogitsWithinReordering) {
    const std::vector<int32_t> ids = fixture_sequence();
    const std::vector<float> want = testing::all_logits(f32_dir_->path(), ids, "reference");
    ASSERT_FALSE(want.empty());
    const size_t vocab = want.size() / ids.size();
    for (const char* kernels : {"avx2", "auto"}) {
        if (!testing::try_open_engine(fp8_dir_->path(), kernels, 1)) continue;  // not usable on this CPU
        const std::vector<float> got = testing::all_logits(fp8_dir_->path(), ids, kernels);
        ASSERT_EQ(got.size(), want.size()) << kernels;
        for (size_t p = 0; p < ids.size(); ++p) {
            const float* a = want.data() + p * vocab;
            const float* b = got.data() + p * vocab;
            float peak = 0.0f;
            for (size_t v = 0; v < vocab; ++v) peak = std::max(peak, std::fabs(a[v]));
            double worst = 0.0;
            for (size_t v = 0; v < vocab; ++v) worst = std::max(worst, std::fabs(static_cast<double>(a[v]) - b[v]));
            // Measured 2026-12-03 on Zen 5 (56 positions each): at most 1.5e-6 of the largest logit for either plugin.
            EXPECT_LE(worst, 1e-4 * peak) << kernels << " position " << p;
            EXPECT_EQ(std::max_element(a, a + vocab) - a, std::max_element(b, b + vocab) - b) << kernels << " position " << p;
        }
    }
}

// The copy is a real FP8 quantization, not a trivial one: every value within half an E4M3 step of
// the original (3 mantissa bits: 1/16 relative, or half the smallest subnormal step of its block),
// and the codes spread over the range.
TEST_F(Qwen3MoeFp8, TheCopyIsARealFp8Quantization) {
    const auto original = read_fixture_tensors();
    size_t checked = 0;
    std::vector<bool> seen(256, false);
    for (const auto& [name, t] : copies_->fp8) {
        if (t.dtype != "F8_E4M3") continue;
        const std::vector<float> w = widen(original.at(name));
        const std::vector<float> deq = widen(copies_->dequantized.at(name));
        const std::vector<float> scales = widen(copies_->fp8.at(name + "_scale_inv"));
        const int64_t cols = t.shape[1], grid_cols = (cols + kBlockCols - 1) / kBlockCols;
        for (size_t k = 0; k < w.size(); ++k) {
            const int64_t o = static_cast<int64_t>(k) / cols, i = static_cast<int64_t>(k) % cols;
            const float scale = scales[static_cast<size_t>((o / kBlockRows) * grid_cols + i / kBlockCols)];
            const double bound = std::max(std::fabs(w[k]) / 16.0, scale * std::ldexp(1.0, -10));
            ASSERT_LE(std::fabs(static_cast<double>(deq[k]) - w[k]), bound * (1 + 1e-6)) << name << " " << k;
            seen[static_cast<uint8_t>(t.bytes[k])] = true;
            ++checked;
        }
    }
    EXPECT_GT(checked, 50000u);
    EXPECT_GT(std::count(seen.begin(), seen.end(), true), 200) << "codes used";
}

TEST_F(Qwen3MoeFp8, ExpertsStreamAtTheirStoredSize) {
    auto resident = testing::try_open_engine(fp8_dir_->path(), "reference", 2);
    ASSERT_TRUE(resident.has_value()) << resident.error().message;
    EXPECT_EQ((*resident)->store().total_expert_bytes(), copies_->fp8_expert_bytes);
    EngineOptions o;
    o.setup.model_dir = fp8_dir_->path();
    o.setup.kernels.value = "reference";
    o.threads = 2;
    o.expert_budget.kind = SizeSpec::Kind::bytes;
    o.expert_budget.bytes = copies_->fp8_expert_bytes * 2 / 3;  // a few aligned slots: experts come and go
    auto streaming = Engine::open(o);
    ASSERT_TRUE(streaming.has_value()) << streaming.error().message;
    ASSERT_TRUE((*streaming)->store().streams());
    const std::vector<int32_t> ids = fixture_sequence();
    auto run = [&](Engine& engine) {
        auto session = engine.new_session(ids.size());
        ForwardOptions all;
        all.all_logits = true;
        auto logits = engine.pipeline().forward(**session, ids, all);
        EXPECT_TRUE(logits.has_value()) << (logits ? "" : logits.error().message);
        return logits ? *logits : std::vector<float>{};
    };
    EXPECT_TRUE(same_bits(run(**streaming), run(**resident)));
    EXPECT_GT((*streaming)->store().stats().bytes_read, 0u);
}

std::string open_error(const std::string& config, const std::map<std::string, StoredTensor>& tensors) {
    test::TempDir dir;
    write_model(dir, config, tensors);
    auto engine = testing::try_open_engine(dir.path(), "reference", 1);
    EXPECT_FALSE(engine.has_value());
    return engine ? "" : engine.error().message;
}

TEST_F(Qwen3MoeFp8, MalformedScalesAreRefusedByName) {
    auto missing = copies_->fp8;
    missing.erase("model.layers.0.self_attn.q_proj.weight_scale_inv");
    std::string e = open_error(fp8_config(), missing);
    EXPECT_NE(e.find("model.layers.0.self_attn.q_proj.weight_scale_inv"), std::string::npos) << e;

    auto wrong_grid = copies_->fp8;
    StoredTensor& s = wrong_grid.at("model.layers.1.mlp.experts.3.down_proj.weight_scale_inv");
    s.shape = {1, 2};  // down_proj [64, 32] in blocks of [24, 40] is a 3 x 1 grid
    s.bytes.resize(4);
    e = open_error(fp8_config(), wrong_grid);
    EXPECT_NE(e.find("model.layers.1.mlp.experts.3.down_proj.weight_scale_inv"), std::string::npos) << e;
    EXPECT_NE(e.find("[3, 1]"), std::string::npos) << e;

    e = open_error(fixture_config_text(), copies_->fp8);  // FP8 tensors, no quantization_config
    EXPECT_NE(e.find("F8_E4M3"), std::string::npos) << e;

    std::string bad_block = fp8_config();
    replace_once(bad_block, "\"weight_block_size\": [24, 40]", "\"weight_block_size\": [24]");
    e = open_error(bad_block, copies_->fp8);
    EXPECT_NE(e.find("weight_block_size"), std::string::npos) << e;
}

}  // namespace
}  // namespace stormo::qwen3_moe
