// DeepSeek-V3's own pieces: config.json in both dialects (the hub's rope_scaling and q_lora_rank
// null), DeepSeek's YaRN softmax scale, weight absorption against the expanded path transformers
// writes, the latent KV cache's size, the hub's multi-token-prediction layer recognised and left
// unloaded, and block-scaled FP8 checkpoints as deepseek-ai ships them. (The fixtures run in the
// oracle, forced-kernel and placement suites.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "../deepseek_v3_config.hpp"
#include "checkpoint_rewrite.hpp"
#include "cli_runner.hpp"
#include "mla_paths_support.hpp"
#include "stormo/json.hpp"

namespace stormo::deepseek_v3 {
namespace {

using testing::replace_once;
using testing::same_bits;
using testing::StoredTensor;

std::string config_text(const std::string& fixture = "deepseek_v3") { return testing::fixture_config_text(fixture); }

// The member at a path of keys (null when absent).
Json at(const Json& j, std::initializer_list<std::string_view> path) {
    const Json* node = &j;
    for (std::string_view key : path) {
        node = node->find(key);
        if (node == nullptr) return Json();
    }
    return *node;
}

Expected<DeepseekV3Config> parse(const std::string& text) { return parse_deepseek_v3_config(testing::parse_config_text(text)); }

// The hub's config.json (deepseek-ai/DeepSeek-V3): rope_theta and rope_scaling {"type": "yarn"} at
// the top level instead of rope_parameters.
std::string hub_dialect(std::string text) {
    replace_once(text,
                 "\"rope_parameters\": {\n    \"beta_fast\": 32.0,\n    \"beta_slow\": 1.0,\n    \"factor\": 40.0,\n"
                 "    \"mscale\": 1.0,\n    \"mscale_all_dim\": 1.0,\n    \"original_max_position_embeddings\": 4096,\n"
                 "    \"rope_theta\": 10000.0,\n    \"rope_type\": \"yarn\"\n  }",
                 "\"rope_theta\": 10000.0,\n  \"rope_scaling\": {\"beta_fast\": 32, \"beta_slow\": 1, \"factor\": 40, "
                 "\"mscale\": 1.0, \"mscale_all_dim\": 1.0, \"original_max_position_embeddings\": 4096, \"type\": \"yarn\"}");
    return text;
}

TEST(DeepseekV3Config, BothDialectsGiveTheSameParameters) {
    auto v5 = parse(config_text());
    ASSERT_TRUE(v5.has_value()) << v5.error().message;
    EXPECT_EQ(v5->q_lora_rank, 32);
    EXPECT_EQ(v5->kv_lora_rank, 32);
    EXPECT_EQ(v5->qk_head_dim(), 24);
    EXPECT_EQ(v5->n_group, 2);
    EXPECT_EQ(v5->first_k_dense_replace, 1);
    EXPECT_EQ(v5->moe_layer_count(), 2);
    EXPECT_TRUE(v5->rope_interleave);
    EXPECT_EQ(v5->rope.type, toolkit::RopeType::yarn);
    auto hub = parse(hub_dialect(config_text()));
    ASSERT_TRUE(hub.has_value()) << hub.error().message;
    EXPECT_EQ(hub->rope.type, v5->rope.type);
    EXPECT_EQ(hub->rope.theta, v5->rope.theta);
    EXPECT_EQ(hub->rope.factor, v5->rope.factor);
    EXPECT_EQ(hub->rope.original_max_position_embeddings, v5->rope.original_max_position_embeddings);
    EXPECT_EQ(hub->rope.mscale, v5->rope.mscale);
    EXPECT_EQ(hub->rope.mscale_all_dim, v5->rope.mscale_all_dim);
    EXPECT_EQ(softmax_scale(*hub), softmax_scale(*v5));
}

TEST(DeepseekV3Config, QLoraRankNullMeansAPlainQProjection) {
    auto plain = parse(config_text("deepseek_v3_noqlora"));
    ASSERT_TRUE(plain.has_value()) << plain.error().message;
    EXPECT_EQ(plain->q_lora_rank, 0);
    EXPECT_EQ(plain->rope.type, toolkit::RopeType::standard);
}

// DeepseekV3Attention: qk_head_dim^-0.5 times mscale(40, mscale_all_dim = 1)^2 = (0.1 ln 40 + 1)^2
// under YaRN; the plain scale under default RoPE.
TEST(DeepseekV3Config, YarnMultipliesTheSoftmaxScaleByMscaleSquared) {
    auto yarn = parse(config_text());
    ASSERT_TRUE(yarn.has_value());
    const double m = 0.1 * std::log(40.0) + 1.0;
    EXPECT_NEAR(m, 1.3689, 1e-4);
    EXPECT_DOUBLE_EQ(softmax_scale(*yarn), std::pow(24.0, -0.5) * m * m);
    auto plain = parse(config_text("deepseek_v3_noqlora"));
    ASSERT_TRUE(plain.has_value());
    EXPECT_DOUBLE_EQ(softmax_scale(*plain), std::pow(24.0, -0.5));
}

TEST(DeepseekV3Config, RouterFieldsAreRequiredAndChecked) {
    for (const char* field : {"\"n_group\": 2,", "\"topk_group\": 1,", "\"first_k_dense_replace\": 1,",
                              "\"routed_scaling_factor\": 2.5,", "\"n_shared_experts\": 1,"}) {
        std::string text = config_text();
        replace_once(text, field, "");
        auto c = parse(text);
        ASSERT_FALSE(c.has_value()) << field;
        const std::string key = std::string(field).substr(1, std::string(field).find('"', 1) - 1);
        EXPECT_NE(c.error().message.find(key), std::string::npos) << c.error().message;
    }
    std::string odd = config_text();
    replace_once(odd, "\"n_group\": 2,", "\"n_group\": 3,");
    auto c = parse(odd);
    ASSERT_FALSE(c.has_value());
    EXPECT_NE(c.error().message.find("n_group (3) must divide n_routed_experts (8)"), std::string::npos)
        << c.error().message;
    std::string singles = config_text();
    replace_once(singles, "\"n_group\": 2,", "\"n_group\": 8,");
    auto s = parse(singles);
    ASSERT_FALSE(s.has_value());
    EXPECT_NE(s.error().message.find("two best"), std::string::npos) << s.error().message;
}

// Measured on 2026-12-03: the two paths differ by at most 5.3e-7 of the attention output's scale
// (float sums in another order); 1e-5 keeps a wide margin and still fails a wrong absorption.
constexpr double kPathTolerance = 1e-5;

class DeepseekV3Fixture : public ::testing::TestWithParam<std::string> {};

TEST_P(DeepseekV3Fixture, AbsorbedAttentionEqualsTheExpandedPath) {
    testing::expect_absorbed_equals_expanded(GetParam(), kPathTolerance);
}

// The KV cache holds the latent and the rope key per position, never K and V.
TEST_P(DeepseekV3Fixture, KvCacheHoldsOnlyTheLatentAndTheRopeKey) {
    auto engine = testing::open_engine(testing::fixture_dir(GetParam()), "reference", 1);
    ASSERT_NE(engine, nullptr);
    auto cfg = parse_deepseek_v3_config(engine->source().config());
    ASSERT_TRUE(cfg.has_value());
    auto session = engine->new_session(100);
    ASSERT_TRUE(session.has_value());
    const uint64_t per_position = static_cast<uint64_t>(cfg->kv_lora_rank + cfg->qk_rope_head_dim) * sizeof(float) *
                                  static_cast<uint64_t>(cfg->n_layers);
    EXPECT_EQ((*session)->kv_bytes(), per_position * 100);
    const uint64_t expanded = static_cast<uint64_t>(cfg->n_heads * (cfg->qk_head_dim() + cfg->v_head_dim)) *
                              sizeof(float) * static_cast<uint64_t>(cfg->n_layers);
    EXPECT_LT(per_position, expanded);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DeepseekV3Fixture,
                         ::testing::Values("deepseek_v3", "deepseek_v3_long", "deepseek_v3_noqlora"));

// The rope layout matters: the same checkpoint read as split-half (rope_interleave false) gives
// other logits, so the interleaved path the fixtures pass is really exercised.
TEST(DeepseekV3Checkpoints, TheInterleavedRopeLayoutIsExercised) {
    const std::vector<int32_t> ids = testing::fixture_sequence("deepseek_v3");
    const std::vector<float> interleaved = testing::all_logits(testing::fixture_dir("deepseek_v3"), ids);
    std::string split = config_text();
    replace_once(split, "\"rope_interleave\": true", "\"rope_interleave\": false");
    test::TempDir dir;
    testing::write_model(dir, split, testing::read_fixture_tensors("deepseek_v3"));
    EXPECT_FALSE(same_bits(testing::all_logits(dir.path(), ids), interleaved));
}

// The hub's multi-token-prediction layer (model.layers.<num_hidden_layers>.*: a whole decoder layer
// with its routed experts, plus enorm, hnorm, eh_proj and shared_head) and num_nextn_predict_layers:
// the checkpoint loads as the one without it, to the bit. inspect lists num_nextn_predict_layers and
// the draft layer, counts its tensors apart, and plans the memory of the model without it unless
// --speculate mtp loads it.
TEST(DeepseekV3Checkpoints, TheHubsMultiTokenPredictionLayerIsRecognisedAndLeftUnloaded) {
    auto tensors = testing::read_fixture_tensors("deepseek_v3");
    const std::vector<int32_t> ids = testing::fixture_sequence("deepseek_v3");
    const std::vector<float> want = testing::all_logits(testing::fixture_dir("deepseek_v3"), ids);
    std::map<std::string, StoredTensor> mtp;
    for (const auto& [name, t] : tensors)
        if (name.starts_with("model.layers.2.")) mtp["model.layers.3." + name.substr(15)] = t;
    const StoredTensor& norm = tensors.at("model.norm.weight");
    mtp["model.layers.3.enorm.weight"] = norm;
    mtp["model.layers.3.hnorm.weight"] = norm;
    mtp["model.layers.3.eh_proj.weight"] = StoredTensor{"BF16", {64, 128}, std::string(64 * 128 * 2, '\0')};
    mtp["model.layers.3.shared_head.norm.weight"] = norm;
    mtp["model.layers.3.shared_head.head.weight"] = tensors.at("lm_head.weight");
    mtp["model.layers.3.embed_tokens.weight"] = tensors.at("model.embed_tokens.weight");
    tensors.insert(mtp.begin(), mtp.end());
    std::string config = config_text();
    replace_once(config, "\"n_group\": 2,", "\"n_group\": 2,\n  \"num_nextn_predict_layers\": 1,");
    test::TempDir dir;
    testing::write_model(dir, config, tensors);
    EXPECT_TRUE(same_bits(testing::all_logits(dir.path(), ids), want));
    const test::CommandResult inspect = test::run_cli("inspect --json --model " + dir.path());
    ASSERT_EQ(inspect.status, 0) << inspect.err;
    const test::CommandResult plain = test::run_cli("inspect --json --model " + testing::fixture_dir("deepseek_v3"));
    ASSERT_EQ(plain.status, 0) << plain.err;
    const Json with = Json::parse(inspect.out, "inspect --json").value();
    const Json without = Json::parse(plain.out, "inspect --json").value();
    EXPECT_EQ(at(with, {"dimensions", "num_nextn_predict_layers"}).as_int(), 1);
    const std::vector<Json>* drafts = at(with, {"draft_layers"}).as_array();
    ASSERT_NE(drafts, nullptr);
    ASSERT_EQ(drafts->size(), 1u);
    EXPECT_EQ((*drafts)[0].as_string(), "model.layers.3.");
    EXPECT_EQ(at(with, {"tensors", "by_role", "draft", "count"}).as_int(), static_cast<int64_t>(mtp.size()));
    EXPECT_EQ(at(with, {"tensors", "count"}).as_int(),
              *at(without, {"tensors", "count"}).as_int() + static_cast<int64_t>(mtp.size()));
    for (const char* planned : {"dense_resident_bytes", "expert_bytes", "expert_budget_bytes"})
        EXPECT_EQ(at(with, {"memory_plan", planned}).as_int(), at(without, {"memory_plan", planned}).as_int())
            << planned;
    EXPECT_EQ(at(with, {"draft_layer_loaded"}).as_bool(), false);
    // --speculate mtp loads it (its own embed_tokens and shared_head.head copies included): the
    // plan counts it, and the drafts it makes leave the ids plain decoding gives.
    const test::CommandResult loaded = test::run_cli("inspect --json --speculate mtp --model " + dir.path());
    ASSERT_EQ(loaded.status, 0) << loaded.err;
    const Json with_mtp = Json::parse(loaded.out, "inspect --json").value();
    EXPECT_EQ(at(with_mtp, {"draft_layer_loaded"}).as_bool(), true);
    for (const char* planned : {"dense_resident_bytes", "expert_bytes", "kv_bytes_for_context"})
        EXPECT_GT(*at(with_mtp, {"memory_plan", planned}).as_int(), *at(with, {"memory_plan", planned}).as_int()) << planned;
    std::string id_list;
    for (size_t i = 0; i < 6; ++i) id_list += (i ? "," : "") + std::to_string(ids[i]);
    const std::string generate = "generate --model " + dir.path() + " --ids " + id_list + " --max-tokens 10 --ignore-eos";
    const test::CommandResult plain_ids = test::run_cli(generate);
    const test::CommandResult mtp_ids = test::run_cli(generate + " --speculate mtp --draft-max 3");
    ASSERT_EQ(plain_ids.status, 0) << plain_ids.err;
    ASSERT_EQ(mtp_ids.status, 0) << mtp_ids.err;
    EXPECT_EQ(mtp_ids.out, plain_ids.out);
}

bool quantized(const std::string& name) {
    for (const char* part : {".self_attn.q_a_proj.", ".self_attn.q_b_proj.", ".self_attn.q_proj.",
                             ".self_attn.kv_a_proj_with_mqa.", ".self_attn.kv_b_proj.", ".self_attn.o_proj.",
                             ".mlp.experts.", ".mlp.shared_experts.", ".mlp.gate_proj.", ".mlp.up_proj.",
                             ".mlp.down_proj."})
        if (name.find(part) != std::string::npos) return name.ends_with(".weight");
    return false;
}

// deepseek-ai's FP8 layout: every linear layer but the router in F8_E4M3 with a weight_scale_inv
// per block, kv_b_proj too (the absorbed attention reads it dequantized). The hub's 128 x 128
// blocks cover these small matrices with one partial block; 16 x 24 blocks tile them in many,
// with partial blocks at the edges.
TEST(DeepseekV3Checkpoints, Fp8GivesTheBitsOfItsDequantizedF32Copy) {
    for (const std::string fixture : {"deepseek_v3", "deepseek_v3_noqlora"})
        for (const auto& [rows, cols] : {std::pair{128, 128}, std::pair{16, 24}}) {
            SCOPED_TRACE(fixture + " blocks " + std::to_string(rows) + "x" + std::to_string(cols));
            const testing::Fp8Copies copies = testing::make_fp8_copies(fixture, quantized, rows, cols);
            std::string fp8_config = config_text(fixture);
            replace_once(fp8_config, "\"architectures\"",
                         "\"quantization_config\": {\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", "
                         "\"quant_method\": \"fp8\", \"weight_block_size\": [" +
                             std::to_string(rows) + ", " + std::to_string(cols) + "]},\n  \"architectures\"");
            test::TempDir fp8_dir, f32_dir;
            testing::write_model(fp8_dir, fp8_config, copies.fp8);
            testing::write_model(f32_dir, config_text(fixture), copies.dequantized);
            const std::vector<int32_t> ids = testing::fixture_sequence(fixture);
            EXPECT_TRUE(same_bits(testing::all_logits(fp8_dir.path(), ids), testing::all_logits(f32_dir.path(), ids)));
            EXPECT_GT(copies.fp8_expert_bytes, 0u);
        }
}

}  // namespace
}  // namespace stormo::deepseek_v3
