// Non-finite weights: a checkpoint holding NaN or Inf fails generation with the layer that first
// produced them (instead of sampling token 0 and exiting 0), and `inspect --check` names the
// tensors holding them.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "checkpoint_rewrite.hpp"
#include "cli_runner.hpp"
#include "model/finite_scan.hpp"

namespace {

using stormo::test::CommandResult;
using stormo::test::run_cli;
using stormo::test::TempDir;
namespace t = stormo::testing;

// The gpt_oss fixture with one BF16 value of `tensor` replaced by `bits` (0x7fc0 NaN, 0x7f80 Inf).
void write_poisoned(const TempDir& dir, const std::string& tensor, uint16_t bits) {
    auto tensors = t::read_fixture_tensors("gpt_oss");
    ASSERT_EQ(tensors.count(tensor), 1u) << tensor;
    ASSERT_EQ(tensors[tensor].dtype, "BF16");
    std::memcpy(tensors[tensor].bytes.data(), &bits, 2);
    t::write_model(dir, t::fixture_config_text("gpt_oss"), tensors);
}

}  // namespace

TEST(HardeningNonFinite, GenerationFailsNamingTheLayer) {
    TempDir dir;
    write_poisoned(dir, "model.layers.1.self_attn.o_proj.bias", 0x7fc0);
    for (const char* sampler : {"", " --temperature 0.8 --top-k 5"}) {
        const CommandResult r = run_cli("generate --model " + dir.path() + " --ids 1,2,3 --max-tokens 3" + sampler);
        EXPECT_EQ(r.status, 1) << r.err;
        EXPECT_EQ(r.out, "");
        EXPECT_NE(r.err.find("non-finite values (NaN or Inf) first produced by layer 1's attention at position 0"),
                  std::string::npos)
            << r.err;
    }
    const CommandResult logits = run_cli("logits --model " + dir.path() + " --ids 1,2 --out " + dir.file("l.npy"));
    EXPECT_EQ(logits.status, 1);
    EXPECT_NE(logits.err.find("layer 1's attention"), std::string::npos) << logits.err;
}

TEST(HardeningNonFinite, InfInTheHeadIsNamed) {
    TempDir dir;
    write_poisoned(dir, "lm_head.weight", 0x7f80);
    const CommandResult r = run_cli("generate --model " + dir.path() + " --ids 1,2,3 --max-tokens 3");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("first produced by the head (logits)"), std::string::npos) << r.err;
}

TEST(HardeningNonFinite, InspectCheckNamesThePoisonedTensor) {
    TempDir dir;
    write_poisoned(dir, "model.layers.1.self_attn.o_proj.bias", 0x7fc0);
    const CommandResult bad = run_cli("inspect --check --model " + dir.path());
    EXPECT_EQ(bad.status, 1) << bad.err;
    EXPECT_NE(bad.out.find("\"model.layers.1.self_attn.o_proj.bias\"  1 non-finite values"), std::string::npos) << bad.out;
    EXPECT_NE(bad.err.find("--check: 1 tensors hold NaN or Inf, the first \"model.layers.1.self_attn.o_proj.bias\""),
              std::string::npos)
        << bad.err;
    const CommandResult good = run_cli("inspect --check --model " + t::fixture_dir("gpt_oss"));
    EXPECT_EQ(good.status, 0) << good.err;
    EXPECT_NE(good.out.find("every value finite"), std::string::npos) << good.out;
}

TEST(HardeningNonFinite, ScanKnowsEachDtypesCodes) {
    TempDir dir;
    auto f32 = [](float v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
    const float inf = std::numeric_limits<float>::infinity();
    stormo::test::write_safetensors(
        dir.file("model.safetensors"),
        {{"a.f32", "F32", {2}, f32(1.0f) + f32(inf)},
         {"b.f16", "F16", {2}, std::string("\x00\x3c\x00\x7c", 4)},  // 1.0, +Inf
         {"c.e4m3", "F8_E4M3", {2}, std::string("\x38\x7f", 2)},      // 1.0, NaN
         {"d.blocks", "U8", {2}, std::string("\xff\xff", 2)},          // FP4 codes: any byte is a value
         {"d.scales", "U8", {2}, std::string("\x7f\xff", 2)},          // E8M0: 0xff is NaN
         {"e.bf16", "BF16", {2}, std::string("\x80\x3f\x80\xff", 4)},  // 1.0, -Inf
         {"f.ok", "BF16", {1}, std::string("\x80\x3f", 2)}});
    stormo::test::write_config(dir);
    auto source = stormo::open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;
    auto scan = stormo::scan_non_finite(**source);
    ASSERT_TRUE(scan) << scan.error().message;
    EXPECT_EQ(scan->tensors_scanned, 6u);
    std::vector<std::string> names;
    for (const auto& n : scan->non_finite) names.push_back(n.name);
    EXPECT_EQ(names, (std::vector<std::string>{"a.f32", "b.f16", "c.e4m3", "d.scales", "e.bf16"}));
}

// No false alarm on real checkpoints: every fixture (BF16, MXFP4 with E8M0 scales) and demo model.
TEST(HardeningNonFinite, InspectCheckPassesEveryShippedCheckpoint) {
    std::vector<std::string> dirs;
    for (const char* f : {"gpt_oss", "gpt_oss_mxfp4", "qwen3_moe", "glm_moe_dsa"}) dirs.push_back(t::fixture_dir(f));
    for (const char* m : {"gpt-oss-demo", "qwen3-moe-demo", "glm-moe-dsa-demo"})
        dirs.push_back(std::string(STORMO_SOURCE_DIR) + "/models/" + m);
    for (const std::string& dir : dirs) {
        const CommandResult r = run_cli("inspect --check --model " + dir);
        EXPECT_EQ(r.status, 0) << dir << ": " << r.err;
        EXPECT_NE(r.out.find("every value finite"), std::string::npos) << dir;
    }
}

// FP8 checkpoints: the E4M3 codes themselves (0x7f / 0xff are NaN) and their scales.
TEST(HardeningNonFinite, ScanFindsANaNCodeInAnFp8Checkpoint) {
    auto copies = t::make_fp8_copies(
        "qwen3_moe", [](const std::string& name) { return name.find("proj.weight") != std::string::npos; }, 16, 16);
    TempDir clean;
    t::write_model(clean, t::fixture_config_text("qwen3_moe"), copies.fp8);
    auto source = stormo::open_model_directory(clean.path());
    ASSERT_TRUE(source) << source.error().message;
    auto scan = stormo::scan_non_finite(**source);
    ASSERT_TRUE(scan) << scan.error().message;
    EXPECT_TRUE(scan->non_finite.empty());

    const std::string poisoned = "model.layers.0.self_attn.q_proj.weight";
    ASSERT_EQ(copies.fp8.count(poisoned), 1u);
    ASSERT_EQ(copies.fp8[poisoned].dtype, "F8_E4M3");
    copies.fp8[poisoned].bytes[3] = static_cast<char>(0xff);
    TempDir bad;
    t::write_model(bad, t::fixture_config_text("qwen3_moe"), copies.fp8);
    auto bad_source = stormo::open_model_directory(bad.path());
    ASSERT_TRUE(bad_source) << bad_source.error().message;
    auto bad_scan = stormo::scan_non_finite(**bad_source);
    ASSERT_TRUE(bad_scan);
    ASSERT_EQ(bad_scan->non_finite.size(), 1u);
    EXPECT_EQ(bad_scan->non_finite[0].name, poisoned);
}
