// Synthetic checkpoints: hub tensor names, shapes and dtypes; determinism in the seed; sharding
// with an index; the real presets' plans (without writing 14 or 65 GB); a forward pass over the
// tiny preset with finite logits; the `stormo synth` command's refusals.
#include <algorithm>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "oracle_support.hpp"
#include "stormo/dtype.hpp"
#include "tools/synth.hpp"
#include "cli_runner.hpp"
#include "safetensors_writer.hpp"
#include "model/model_source.hpp"
#include "util/sha256.hpp"

namespace stormo::testing {
namespace {

using stormo::test::TempDir;

synth::SynthPlan plan_of(const std::string& preset, uint64_t seed = 0, std::optional<int> layers = {},
                         uint64_t max_shard = uint64_t{4} << 30) {
    synth::SynthOptions o;
    o.preset = preset;
    o.seed = seed;
    o.layers = layers;
    o.max_shard_bytes = max_shard;
    auto plan = synth::plan_synth(o);
    EXPECT_TRUE(plan.has_value()) << (plan ? "" : plan.error().message);
    return plan ? *plan : synth::SynthPlan{};
}

std::string write_plan(const synth::SynthPlan& plan, const std::string& dir) {
    auto w = synth::write_synth(plan, dir, synth::WriteOptions{});
    EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message);
    return dir;
}

std::unique_ptr<ModelSource> open_dir(const std::string& dir) {
    auto s = open_model_directory(dir);
    EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message);
    return s ? std::move(*s) : nullptr;
}

std::vector<std::byte> tensor_bytes(const ModelSource& source, const std::string& name) {
    const TensorInfo* t = source.find(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return {};
    std::vector<std::byte> bytes(t->nbytes);
    auto r = source.read(*t, 0, t->nbytes, bytes.data());
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
    return bytes;
}

std::string tensor_sha(const ModelSource& source, const std::string& name) {
    const auto bytes = tensor_bytes(source, name);
    auto h = sha256_hex(bytes.data(), bytes.size());
    EXPECT_TRUE(h.has_value());
    return h ? *h : std::string();
}

void expect_tensor(const ModelSource& s, const std::string& name, DType dtype, const Shape& shape) {
    const TensorInfo* t = s.find(name);
    ASSERT_NE(t, nullptr) << name << " is missing";
    EXPECT_EQ(t->dtype, dtype) << name;
    EXPECT_EQ(t->shape, shape) << name;
    EXPECT_EQ(t->nbytes, static_cast<uint64_t>(element_count(shape)) * dtype_size(dtype)) << name;
}

// Bytes of a GPT-OSS checkpoint computed from its dimensions, independently of the planner.
uint64_t gpt_oss_bytes(int64_t h, int64_t inter, int64_t layers, int64_t heads, int64_t kv_heads, int64_t head_dim,
                       int64_t experts, int64_t vocab) {
    const int64_t q = heads * head_dim, kv = kv_heads * head_dim;
    const int64_t bf16_layer = 2 * h + (q * h + q) + 2 * (kv * h + kv) + (h * q + h) + heads + (experts * h + experts) +
                               experts * 2 * inter + experts * h;
    const int64_t u8_layer = experts * 2 * inter * (h / 32) * 17 + experts * h * (inter / 32) * 17;
    const int64_t global = 2 * (2 * vocab * h + h);
    return static_cast<uint64_t>(layers * (2 * bf16_layer + u8_layer) + global);
}

TEST(Synth, TinyPresetHasTheHubNamesShapesAndDtypes) {
    TempDir tmp;
    const auto plan = plan_of("gpt-oss-tiny", 1);
    const auto source = open_dir(write_plan(plan, tmp.file("tiny")));
    ASSERT_TRUE(source);
    // 4 layers x (2 norms, 8 attention weights/biases, sinks, 2 router, 6 expert parts) + 3 globals.
    EXPECT_EQ(source->tensors().size(), 4u * 19u + 3u);
    EXPECT_EQ(source->tensors().size(), plan.tensors.size());
    for (const auto& t : plan.tensors) expect_tensor(*source, t.name, t.dtype, t.shape);

    expect_tensor(*source, "model.embed_tokens.weight", DType::BF16, {1024, 256});
    expect_tensor(*source, "lm_head.weight", DType::BF16, {1024, 256});
    expect_tensor(*source, "model.norm.weight", DType::BF16, {256});
    expect_tensor(*source, "model.layers.0.input_layernorm.weight", DType::BF16, {256});
    expect_tensor(*source, "model.layers.3.post_attention_layernorm.weight", DType::BF16, {256});
    expect_tensor(*source, "model.layers.0.self_attn.q_proj.weight", DType::BF16, {256, 256});
    expect_tensor(*source, "model.layers.0.self_attn.k_proj.weight", DType::BF16, {128, 256});
    expect_tensor(*source, "model.layers.0.self_attn.v_proj.bias", DType::BF16, {128});
    expect_tensor(*source, "model.layers.0.self_attn.o_proj.weight", DType::BF16, {256, 256});
    expect_tensor(*source, "model.layers.1.self_attn.sinks", DType::BF16, {4});
    expect_tensor(*source, "model.layers.2.mlp.router.weight", DType::BF16, {8, 256});
    expect_tensor(*source, "model.layers.2.mlp.router.bias", DType::BF16, {8});
    expect_tensor(*source, "model.layers.3.mlp.experts.gate_up_proj_blocks", DType::U8, {8, 512, 8, 16});
    expect_tensor(*source, "model.layers.3.mlp.experts.gate_up_proj_scales", DType::U8, {8, 512, 8});
    expect_tensor(*source, "model.layers.3.mlp.experts.gate_up_proj_bias", DType::BF16, {8, 512});
    expect_tensor(*source, "model.layers.3.mlp.experts.down_proj_blocks", DType::U8, {8, 256, 8, 16});
    expect_tensor(*source, "model.layers.3.mlp.experts.down_proj_scales", DType::U8, {8, 256, 8});
    expect_tensor(*source, "model.layers.3.mlp.experts.down_proj_bias", DType::BF16, {8, 256});

    const ModelConfig& c = source->config();
    EXPECT_EQ(*c.integer("num_hidden_layers"), 4);
    EXPECT_EQ(*c.integer("num_local_experts"), 8);
    EXPECT_EQ(*c.integer("num_experts_per_tok"), 2);
    EXPECT_EQ(*c.strings("layer_types"),
              (std::vector<std::string>{"sliding_attention", "full_attention", "sliding_attention", "full_attention"}));
    EXPECT_EQ(*c.object("quantization_config")->string("quant_method"), "mxfp4");
    ASSERT_TRUE(source->generation_config().has_value());
}

TEST(Synth, ValuesStayInTheirRanges) {
    TempDir tmp;
    const auto source = open_dir(write_plan(plan_of("gpt-oss-tiny", 3), tmp.file("tiny")));
    ASSERT_TRUE(source);
    // E8M0 scales: three consecutive exponents around 2^-6 for fan-in 256 (bytes 120..122).
    for (std::byte b : tensor_bytes(*source, "model.layers.0.mlp.experts.down_proj_scales")) {
        EXPECT_GE(static_cast<int>(b), 120);
        EXPECT_LE(static_cast<int>(b), 122);
    }
    auto bf16_values = [&](const std::string& name) {
        const auto bytes = tensor_bytes(*source, name);
        return to_f32(DType::BF16, bytes.data(), bytes.size() / 2);
    };
    for (float v : bf16_values("model.layers.1.input_layernorm.weight")) EXPECT_NEAR(v, 1.0f, 0.1f + 1.0f / 128);  // 1 +- 0.1, rounded to BF16
    const float bound = std::sqrt(3.0f / 256.0f) * 1.01f;
    double sum_sq = 0.0;
    const auto q = bf16_values("model.layers.1.self_attn.q_proj.weight");
    for (float v : q) {
        EXPECT_LE(std::fabs(v), bound);
        sum_sq += static_cast<double>(v) * v;
    }
    // Uniform in +-a has variance a^2 / 3 = 1 / fan_in.
    EXPECT_NEAR(sum_sq / static_cast<double>(q.size()), 1.0 / 256.0, 0.1 / 256.0);
    for (float v : bf16_values("model.layers.1.mlp.experts.gate_up_proj_bias")) EXPECT_LE(std::fabs(v), 0.0202f);
}

TEST(Synth, SameSeedSameBytesOtherSeedOtherBytes) {
    TempDir tmp;
    const auto a = open_dir(write_plan(plan_of("gpt-oss-tiny", 7), tmp.file("a")));
    const auto b = open_dir(write_plan(plan_of("gpt-oss-tiny", 7), tmp.file("b")));
    const auto c = open_dir(write_plan(plan_of("gpt-oss-tiny", 8), tmp.file("c")));
    ASSERT_TRUE(a && b && c);
    for (const char* name : {"model.embed_tokens.weight", "model.layers.2.mlp.experts.gate_up_proj_blocks",
                             "model.layers.2.mlp.experts.gate_up_proj_scales", "lm_head.weight"}) {
        EXPECT_EQ(tensor_sha(*a, name), tensor_sha(*b, name)) << name;
        EXPECT_NE(tensor_sha(*a, name), tensor_sha(*c, name)) << name;
    }
    // Two tensors of one checkpoint with the same shape and fill still differ.
    EXPECT_NE(tensor_sha(*a, "model.layers.0.self_attn.q_proj.weight"), tensor_sha(*a, "model.layers.1.self_attn.q_proj.weight"));
}

TEST(Synth, BytesDoNotDependOnChunkingOrDepth) {
    const auto plan = plan_of("gpt-oss-tiny", 11);
    const auto deeper = plan_of("gpt-oss-tiny", 11, 6);
    for (size_t i = 0; i < plan.tensors.size(); i += 5) {
        const auto& t = plan.tensors[i];
        std::vector<std::byte> whole(t.nbytes), pieces(t.nbytes), other(t.nbytes);
        synth::fill_tensor_bytes(plan, i, 0, whole.data(), whole.size());
        // Odd piece sizes: partial words at both ends of every piece.
        for (uint64_t at = 0; at < t.nbytes; at += 13)
            synth::fill_tensor_bytes(plan, i, at, pieces.data() + at, static_cast<size_t>(std::min<uint64_t>(13, t.nbytes - at)));
        EXPECT_EQ(whole, pieces) << t.name;
        // The same tensor of a deeper model (--layers 6) holds the same bytes.
        size_t j = 0;
        while (j < deeper.tensors.size() && deeper.tensors[j].name != t.name) ++j;
        ASSERT_LT(j, deeper.tensors.size()) << t.name;
        synth::fill_tensor_bytes(deeper, j, 0, other.data(), other.size());
        EXPECT_EQ(whole, other) << t.name;
    }
}

TEST(Synth, ShardsWithAnIndexLikeTheHub) {
    TempDir tmp;
    const auto plan = plan_of("gpt-oss-tiny", 5, {}, uint64_t{2} << 20);
    ASSERT_GE(plan.shards.size(), 3u);
    for (size_t k = 0; k < plan.shards.size(); ++k) {
        char name[64];
        std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, plan.shards.size());
        EXPECT_EQ(plan.shards[k].file_name, name);
    }
    const std::string dir = write_plan(plan, tmp.file("sharded"));
    EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
    const Json index = read_json_file(dir + "/model.safetensors.index.json");
    ASSERT_NE(index.find("weight_map"), nullptr);
    EXPECT_EQ(index.find("weight_map")->as_object()->size(), plan.tensors.size());
    EXPECT_EQ(static_cast<uint64_t>(*index.find("metadata")->find("total_size")->as_int()), plan.total_bytes());
    const auto sharded = open_dir(dir);
    const auto single = open_dir(write_plan(plan_of("gpt-oss-tiny", 5), tmp.file("single")));
    ASSERT_TRUE(sharded && single);
    EXPECT_EQ(sharded->tensors().size(), plan.tensors.size());
    for (const char* name : {"model.embed_tokens.weight", "model.layers.3.mlp.experts.down_proj_blocks", "lm_head.weight"})
        EXPECT_EQ(tensor_sha(*sharded, name), tensor_sha(*single, name)) << name;
}

TEST(Synth, RealPresetPlansWithoutWriting) {
    const auto p20 = plan_of("gpt-oss-20b");
    EXPECT_EQ(p20.total_bytes(), gpt_oss_bytes(2880, 2880, 24, 64, 8, 64, 32, 201088));
    EXPECT_GT(p20.total_bytes(), 13'500'000'000u);
    EXPECT_LT(p20.total_bytes(), 14'000'000'000u);
    EXPECT_EQ(p20.tensors.size(), 24u * 19u + 3u);
    for (const auto& s : p20.shards) EXPECT_LE(s.data_bytes, uint64_t{4} << 30) << s.file_name;
    auto find = [](const synth::SynthPlan& p, const std::string& name) -> const synth::PlannedTensor* {
        for (const auto& t : p.tensors)
            if (t.name == name) return &t;
        return nullptr;
    };
    const auto* blocks = find(p20, "model.layers.23.mlp.experts.gate_up_proj_blocks");
    ASSERT_NE(blocks, nullptr);
    EXPECT_EQ(blocks->shape, (Shape{32, 5760, 90, 16}));
    EXPECT_EQ(blocks->dtype, DType::U8);
    EXPECT_EQ(find(p20, "model.layers.0.mlp.experts.down_proj_scales")->shape, (Shape{32, 2880, 90}));
    EXPECT_EQ(find(p20, "model.layers.0.self_attn.q_proj.weight")->shape, (Shape{4096, 2880}));
    EXPECT_EQ(find(p20, "model.layers.0.self_attn.k_proj.weight")->shape, (Shape{512, 2880}));
    EXPECT_EQ(find(p20, "model.layers.0.self_attn.sinks")->shape, (Shape{64}));
    EXPECT_EQ(find(p20, "lm_head.weight")->shape, (Shape{201088, 2880}));

    const auto p120 = plan_of("gpt-oss-120b");
    EXPECT_EQ(p120.total_bytes(), gpt_oss_bytes(2880, 2880, 36, 64, 8, 64, 128, 201088));
    EXPECT_GT(p120.total_bytes(), 63'000'000'000u);
    EXPECT_LT(p120.total_bytes(), 66'000'000'000u);
    EXPECT_EQ(find(p120, "model.layers.35.mlp.experts.down_proj_blocks")->shape, (Shape{128, 2880, 90, 16}));
    for (const auto& s : p120.shards) EXPECT_LE(s.data_bytes, uint64_t{4} << 30) << s.file_name;

    // --layers 1: one layer of tensors, the config follows.
    const auto one = plan_of("gpt-oss-20b", 0, 1);
    EXPECT_EQ(one.tensors.size(), 19u + 3u);
    EXPECT_EQ(one.total_bytes(), gpt_oss_bytes(2880, 2880, 1, 64, 8, 64, 32, 201088));
    auto config = ModelConfig::parse(one.config_json, "config.json");
    ASSERT_TRUE(config.has_value()) << config.error().message;
    EXPECT_EQ(*config->integer("num_hidden_layers"), 1);
    EXPECT_EQ(*config->strings("layer_types"), std::vector<std::string>{"sliding_attention"});
    EXPECT_EQ(*config->integer("hidden_size"), 2880);
    EXPECT_EQ(*config->integer("vocab_size"), 201088);
    EXPECT_EQ(*config->integer("sliding_window"), 128);
    EXPECT_EQ(*config->number("rope_theta"), 150000.0);
    EXPECT_EQ(*config->object("rope_scaling")->number("factor"), 32.0);
    EXPECT_EQ(*config->number("swiglu_limit"), 7.0);
}

TEST(Synth, BadRequestsAreRefusedByName) {
    synth::SynthOptions o;
    o.preset = "gpt-oss-7b";
    auto unknown = synth::plan_synth(o);
    ASSERT_FALSE(unknown.has_value());
    EXPECT_NE(unknown.error().message.find("gpt-oss-7b"), std::string::npos);
    const auto presets = synth::synth_presets();
    ASSERT_TRUE(presets.has_value()) << presets.error().message;
    for (const auto& p : *presets) EXPECT_NE(unknown.error().message.find(p.name), std::string::npos);
    o.preset = "gpt-oss-tiny";
    o.layers = 0;
    auto zero = synth::plan_synth(o);
    ASSERT_FALSE(zero.has_value());
    EXPECT_NE(zero.error().message.find("--layers"), std::string::npos);

    TempDir tmp;
    const std::string dir = tmp.file("busy");
    std::filesystem::create_directories(dir);
    stormo::test::write_bytes(dir + "/notes.txt", "mine");
    const auto plan = plan_of("gpt-oss-tiny");
    auto refused = synth::write_synth(plan, dir, synth::WriteOptions{});
    ASSERT_FALSE(refused.has_value());
    EXPECT_NE(refused.error().message.find(dir), std::string::npos);
    EXPECT_NE(refused.error().message.find("not empty"), std::string::npos);
    synth::WriteOptions force;
    force.force = true;
    ASSERT_TRUE(synth::write_synth(plan, dir, force).has_value());
    EXPECT_TRUE(std::filesystem::exists(dir + "/notes.txt"));  // --force replaces the checkpoint only
    EXPECT_TRUE(open_dir(dir));

    // A path under a regular file cannot be created: the error names it.
    auto blocked = synth::write_synth(plan, dir + "/notes.txt/sub", synth::WriteOptions{});
    ASSERT_FALSE(blocked.has_value());
    EXPECT_NE(blocked.error().message.find("notes.txt"), std::string::npos);
}

// Both families' toy presets load in their family and give unit-order, finite logits.
class SynthTiny : public ::testing::TestWithParam<std::string> {};

TEST_P(SynthTiny, RunsWithFiniteLogits) {
    TempDir tmp;
    const std::string dir = write_plan(plan_of(GetParam(), 2), tmp.file("tiny"));
    auto engine = open_engine(dir);
    ASSERT_TRUE(engine);
    const std::string family = GetParam() == "gpt-oss-tiny"                                          ? "gpt_oss"
                               : GetParam().starts_with("qwen3-moe-tiny") ? "qwen3_moe"
                                                                              : "glm_dsa";
    EXPECT_EQ(engine->family_name(), family);
    auto session = engine->new_session(64);
    ASSERT_TRUE(session.has_value());
    std::vector<int32_t> ids;
    for (int32_t i = 0; i < 40; ++i) ids.push_back((i * 97 + 5) % 1024);  // past gpt-oss-tiny's sliding window of 32
    expect_finite_unit_order_logits(*engine, **session, ids, 1024);
}

INSTANTIATE_TEST_SUITE_P(Presets, SynthTiny,
                         ::testing::Values("gpt-oss-tiny", "qwen3-moe-tiny", "qwen3-moe-tiny-fp8", "glm-moe-dsa-tiny"),
                         [](const auto& i) {
                             std::string name = i.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

// The Qwen3 presets have the hub's shapes and tensor names (the plans only: 61 and 470 GB).
TEST(Synth, Qwen3PresetsHaveTheHubsShapes) {
    const auto plan = plan_of("qwen3-30b-a3b");
    EXPECT_EQ(plan.layers, 48);
    EXPECT_NE(plan.config_json.find("\"num_experts\": 128"), std::string::npos);
    EXPECT_NE(plan.config_json.find("\"moe_intermediate_size\": 768"), std::string::npos);
    size_t experts = 0;
    bool gate = false;
    for (const auto& t : plan.tensors) {
        experts += t.name.find(".mlp.experts.") != std::string::npos;
        if (t.name == "model.layers.47.mlp.experts.127.down_proj.weight") gate = t.shape == stormo::Shape{2048, 768};
    }
    EXPECT_EQ(experts, 48u * 128u * 3u);
    EXPECT_TRUE(gate);
    EXPECT_EQ(plan.total_bytes(), 61064245248u);
    // GLM-5, cut to 5 layers (3 dense) and 32 experts: the real per-expert shapes.
    synth::SynthOptions glm;
    glm.preset = "glm-5";
    glm.layers = 5;
    glm.experts = 32;
    auto cut = synth::plan_synth(glm);
    ASSERT_TRUE(cut.has_value()) << cut.error().message;
    EXPECT_NE(cut->config_json.find("\"n_routed_experts\": 32"), std::string::npos);
    bool expert_shape = false;
    for (const auto& t : cut->tensors)
        if (t.name == "model.layers.4.mlp.experts.31.down_proj.weight") expert_shape = t.shape == stormo::Shape{6144, 2048};
    EXPECT_TRUE(expert_shape);
    glm.experts = 4;  // fewer than the 8 experts per token
    EXPECT_FALSE(synth::plan_synth(glm).has_value());
    const auto big = plan_of("qwen3-235b-a22b");
    EXPECT_EQ(big.layers, 94);
    EXPECT_GT(big.total_bytes(), 400ull << 30);
}

// Qwen/Qwen3-30B-A3B-FP8's layout: the attention projections and every expert matrix in E4M3 with
// a BF16 weight_scale_inv per 128 x 128 block, the router, norms, embedding and head in BF16, and
// the hub's quantization_config. The toy's codes hold no NaN byte and its weights have the BF16
// toy's RMS of 1 / sqrt(fan_in).
TEST(Synth, Qwen3Fp8PresetsHaveTheHubsLayout) {
    const auto plan = plan_of("qwen3-30b-a3b-fp8");
    EXPECT_EQ(plan.layers, 48);
    EXPECT_NE(plan.config_json.find("\"quant_method\": \"fp8\""), std::string::npos);
    EXPECT_NE(plan.config_json.find("\"weight_block_size\": [\n      128,\n      128\n    ]"), std::string::npos);
    size_t fp8 = 0, scales = 0;
    for (const auto& t : plan.tensors) {
        fp8 += t.dtype == DType::F8_E4M3;
        scales += t.name.ends_with("_scale_inv");
        if (t.name == "model.layers.47.mlp.experts.127.gate_proj.weight_scale_inv") {
            EXPECT_EQ(t.dtype, DType::BF16);
            EXPECT_EQ(t.shape, (stormo::Shape{6, 16}));  // [768, 2048] in blocks of 128
        }
        if (t.name == "model.layers.0.mlp.gate.weight" || t.name == "lm_head.weight") {
            EXPECT_EQ(t.dtype, DType::BF16) << t.name;
        }
    }
    EXPECT_EQ(fp8, 48u * (4u + 128u * 3u));
    EXPECT_EQ(scales, fp8);
    // Dimensions: per layer 128 experts x 3 x 768 x 2048 codes + attention (4096 + 2 x 512 + 4096) x 2048,
    // their BF16 scales, the BF16 norms and router; embedding and head BF16.
    EXPECT_EQ(plan.total_bytes(), 31170895872u);

    TempDir tmp;
    const auto source = open_dir(write_plan(plan_of("qwen3-moe-tiny-fp8", 5), tmp.file("tiny")));
    ASSERT_TRUE(source);
    const auto codes = tensor_bytes(*source, "model.layers.2.mlp.experts.3.down_proj.weight");  // [256, 128]
    const auto scale_bytes = tensor_bytes(*source, "model.layers.2.mlp.experts.3.down_proj.weight_scale_inv");
    ASSERT_EQ(scale_bytes.size(), 2u * 2u);  // [2, 1] BF16
    const std::vector<float> scale = to_f32(DType::BF16, scale_bytes.data(), 2);
    double sum_sq = 0.0;
    size_t exponent_zero = 0, exponent_top = 0;
    for (size_t k = 0; k < codes.size(); ++k) {
        const auto b = static_cast<uint8_t>(codes[k]);
        ASSERT_NE(b & 0x7F, 0x7F) << "a NaN code at " << k;
        exponent_zero += (b & 0x78) == 0;
        exponent_top += (b & 0x78) == 0x78;
        const double w = static_cast<double>(f8_e4m3_to_f32(b)) * scale[(k / 128) / 128];
        sum_sq += w * w;
    }
    EXPECT_NEAR(sum_sq / static_cast<double>(codes.size()), 1.0 / 128.0, 0.15 / 128.0);
    // A checkpoint's codes, not uniform bytes (where one in 16 has each exponent): normal weights
    // scaled to a block's amax put about 1 in 8000 at exponent 0 and 1 in 100 at the top one (|v| >= 256).
    EXPECT_LT(exponent_zero, codes.size() / 500) << exponent_zero << " of " << codes.size();
    EXPECT_GT(exponent_top, codes.size() / 330);
    EXPECT_LT(exponent_top, codes.size() / 33);
}

using stormo::test::CommandResult;
using stormo::test::run_cli;

TEST(Synth, CommandWritesReportsAndRefuses) {
    TempDir tmp;
    const std::string dir = tmp.file("cli");
    const auto ok = run_cli("synth --preset gpt-oss-tiny --out " + dir + " --seed 4 --layers 2");
    EXPECT_EQ(ok.status, 0) << ok.err;
    EXPECT_NE(ok.err.find("MB/s"), std::string::npos) << ok.err;
    const auto source = open_dir(dir);
    ASSERT_TRUE(source);
    EXPECT_EQ(*source->config().integer("num_hidden_layers"), 2);
    EXPECT_EQ(tensor_sha(*source, "model.layers.1.mlp.experts.gate_up_proj_blocks"),
              [&] {
                  TempDir other;
                  return tensor_sha(*open_dir(write_plan(plan_of("gpt-oss-tiny", 4, 2), other.file("m"))),
                                    "model.layers.1.mlp.experts.gate_up_proj_blocks");
              }());

    const auto again = run_cli("synth --preset gpt-oss-tiny --out " + dir);
    EXPECT_EQ(again.status, 2);
    EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
    EXPECT_EQ(std::count(again.err.begin(), again.err.end(), '\n'), 1) << again.err;

    const auto unknown = run_cli("synth --preset llama --out " + tmp.file("x"));
    EXPECT_EQ(unknown.status, 2);
    EXPECT_NE(unknown.err.find("gpt-oss-20b"), std::string::npos) << unknown.err;

    const auto dry = run_cli("synth --preset gpt-oss-20b --dry-run");
    EXPECT_EQ(dry.status, 0) << dry.err;
    EXPECT_NE(dry.out.find("13761264768 bytes"), std::string::npos) << dry.out;
    EXPECT_NE(dry.out.find("459 tensors, 11956805184 elements, "), std::string::npos) << dry.out;
}

TEST(Synth, ADanglingSymlinkAsTheDirectoryIsNamedAsOne) {
    TempDir tmp;
    std::filesystem::create_symlink(tmp.file("not-there"), tmp.file("link"));
    const auto r = run_cli("synth --preset gpt-oss-tiny --layers 1 --out " + tmp.file("link"));
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find(tmp.file("link") + ": a symlink to " + tmp.file("not-there") + ", which does not exist"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("File exists"), std::string::npos) << r.err;
}

// The presets come from the family plugins: each built-in family lists its own, and the host's
// synth names none of them.
TEST(Synth, EveryLoadedFamilyListsItsOwnPresets) {
    const auto presets = synth::synth_presets();
    ASSERT_TRUE(presets.has_value()) << presets.error().message;
    auto family_of = [&](const std::string& name) {
        for (const auto& p : *presets)
            if (p.name == name) return p.family;
        return std::string("none");
    };
    EXPECT_EQ(family_of("gpt-oss-20b"), "gpt_oss");
    EXPECT_EQ(family_of("qwen3-moe-tiny-fp8"), "qwen3_moe");
    EXPECT_EQ(family_of("glm-5"), "glm_dsa");
    EXPECT_EQ(plan_of("glm-moe-dsa-tiny").family, "glm_dsa");

    const auto listed = run_cli("synth --list");
    EXPECT_EQ(listed.status, 0) << listed.err;
    for (const auto& p : *presets) EXPECT_NE(listed.out.find(p.name + "\t" + p.description + "\n"), std::string::npos) << p.name;
}

TEST(Synth, TheHostsSynthNamesNoFamily) {
    for (const char* file : {"host/src/tools/synth.cpp", "host/src/tools/synth.hpp", "host/src/cli/cmd_synth.cpp"}) {
        std::ifstream in(std::string(STORMO_SOURCE_DIR) + "/" + file);
        ASSERT_TRUE(in) << file;
        std::stringstream text;
        text << in.rdbuf();
        for (const char* family : {"gpt_oss", "gpt-oss", "GptOss", "qwen3", "Qwen3", "glm", "GLM"})
            EXPECT_EQ(text.str().find(family), std::string::npos) << file << " names " << family;
    }
}

// A family's preset mistakes are refused with the family named: a preset name another family
// gives, a tensor listed twice, a config.json that is not JSON.
TEST(Synth, AFamilysPresetMistakesAreRefusedNamingIt) {
    const std::string plugins = std::string(" --dry-run --plugins-dir ") + STORMO_TEST_PLUGIN_DIR + "/synth_mistakes";
    const auto shared = run_cli("synth --preset gpt-oss-tiny" + plugins);
    EXPECT_EQ(shared.status, 2);
    EXPECT_NE(shared.err.find("described by two family plugins (gpt_oss, synth_mistakes)"), std::string::npos) << shared.err;
    const auto twice = run_cli("synth --preset tensor-twice" + plugins);
    EXPECT_EQ(twice.status, 2);
    EXPECT_NE(twice.err.find("synth_mistakes synth preset \"tensor-twice\": tensor model.norm.weight is listed twice"),
              std::string::npos)
        << twice.err;
    const auto config = run_cli("synth --preset config-not-json" + plugins);
    EXPECT_EQ(config.status, 2);
    EXPECT_NE(config.err.find("synth_mistakes synth preset \"config-not-json\""), std::string::npos) << config.err;
    EXPECT_EQ(std::count(config.err.begin(), config.err.end(), '\n'), 1) << config.err;
}

}  // namespace
}  // namespace stormo::testing
