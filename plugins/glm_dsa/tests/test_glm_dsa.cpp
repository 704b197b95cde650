// GLM-MoE-DSA's own pieces: config.json in both spellings, weight absorption against the expanded
// path transformers writes, the latent KV cache's size, multi-token-prediction layers recognised
// and left unloaded, and block-scaled FP8 checkpoints. (The fixtures run in the oracle,
// forced-kernel and placement suites; the indexer's positions are checked there.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../glm_dsa_config.hpp"
#include "checkpoint_rewrite.hpp"
#include "cli_runner.hpp"
#include "mla_paths_support.hpp"

namespace stormo::glm_dsa {
namespace {

using testing::replace_once;
using testing::same_bits;
using testing::StoredTensor;

std::string config_text(const std::string& fixture = "glm_moe_dsa") { return testing::fixture_config_text(fixture); }

TEST(GlmDsaConfig, BothSpellingsGiveTheSameParameters) {
    auto v5 = parse_glm_dsa_config(testing::parse_config_text(config_text()));
    ASSERT_TRUE(v5.has_value()) << v5.error().message;
    EXPECT_EQ(v5->kv_lora_rank, 32);
    EXPECT_EQ(v5->qk_head_dim(), 24);
    EXPECT_EQ(v5->index_topk, 8);
    EXPECT_EQ(v5->moe_layer, (std::vector<bool>{false, true, true, true}));
    // first_k_dense_replace instead of mlp_layer_types, num_local_experts, and the hub's rope keys.
    std::string hub = config_text();
    replace_once(hub, "\"mlp_layer_types\": [\n    \"dense\",\n    \"sparse\",\n    \"sparse\",\n    \"sparse\"\n  ],", "");
    replace_once(hub, "\"n_routed_experts\": 8", "\"num_local_experts\": 8");
    replace_once(hub, "\"rope_parameters\": {\n    \"rope_theta\": 1000000.0,\n    \"rope_type\": \"default\"\n  }",
                 "\"rope_theta\": 1000000.0, \"rope_scaling\": null");
    auto h = parse_glm_dsa_config(testing::parse_config_text(hub));
    ASSERT_TRUE(h.has_value()) << h.error().message;
    EXPECT_EQ(h->moe_layer, v5->moe_layer);
    EXPECT_EQ(h->n_experts, v5->n_experts);
    EXPECT_EQ(h->rope.theta, v5->rope.theta);

    std::string neither = hub;
    replace_once(neither, "\"first_k_dense_replace\": 1,", "");
    auto n = parse_glm_dsa_config(testing::parse_config_text(neither));
    ASSERT_FALSE(n.has_value());
    EXPECT_NE(n.error().message.find("first_k_dense_replace"), std::string::npos) << n.error().message;
}

// GlmMoeDsaConfig defaults n_shared_experts to 1 and routed_scaling_factor to 2.5; a file without
// them is refused, never run with another default.
TEST(GlmDsaConfig, SharedExpertsAndScalingAreRequired) {
    for (const char* field : {"\"n_shared_experts\": 1,", "\"routed_scaling_factor\": 2.5,"}) {
        std::string text = config_text();
        replace_once(text, field, "");
        auto c = parse_glm_dsa_config(testing::parse_config_text(text));
        ASSERT_FALSE(c.has_value()) << field;
        const std::string key = std::string(field).substr(1, std::string(field).find('"', 1) - 1);
        EXPECT_NE(c.error().message.find(key), std::string::npos) << c.error().message;
    }
}

// Measured on 2026-12-01: the two paths differ by at most 4.6e-7 of the attention output's scale
// (float sums in another order); 1e-5 keeps a wide margin and still fails a wrong absorption.
constexpr double kPathTolerance = 1e-5;

class GlmDsaFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(GlmDsaFixture, AbsorbedAttentionEqualsTheExpandedPath) {
    testing::expect_absorbed_equals_expanded(GetParam(), kPathTolerance);
}

// The KV cache holds the latent, the rope key and the indexer's key per position, never K and V.
TEST_P(GlmDsaFixture, KvCacheHoldsOnlyTheLatentAndTheKeys) {
    auto engine = testing::open_engine(testing::fixture_dir(GetParam()), "reference", 1);
    ASSERT_NE(engine, nullptr);
    auto cfg = parse_glm_dsa_config(engine->source().config());
    ASSERT_TRUE(cfg.has_value());
    auto session = engine->new_session(100);
    ASSERT_TRUE(session.has_value());
    const uint64_t per_position = static_cast<uint64_t>(cfg->kv_lora_rank + cfg->qk_rope_head_dim + cfg->index_head_dim) *
                                  sizeof(float) * static_cast<uint64_t>(cfg->n_layers);
    EXPECT_EQ((*session)->kv_bytes(), per_position * 100);
    const uint64_t expanded = static_cast<uint64_t>(cfg->n_heads * (cfg->qk_head_dim() + cfg->v_head_dim)) *
                              sizeof(float) * static_cast<uint64_t>(cfg->n_layers);
    EXPECT_LT(per_position, expanded);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GlmDsaFixture, ::testing::Values("glm_moe_dsa", "glm_moe_dsa_long"));

// A checkpoint with a multi-token-prediction layer (model.layers.<num_hidden_layers>.*, and
// num_nextn_predict_layers) loads as the one without it: the layer is recognised, never an
// unknown-tensor error, and left unloaded; inspect lists num_nextn_predict_layers.
TEST(GlmDsaCheckpoints, MultiTokenPredictionLayersAreRecognisedAndLeftUnloaded) {
    auto tensors = testing::read_fixture_tensors("glm_moe_dsa");
    const std::vector<int32_t> ids = testing::fixture_sequence("glm_moe_dsa");
    const std::vector<float> want = testing::all_logits(testing::fixture_dir("glm_moe_dsa"), ids);
    std::map<std::string, StoredTensor> mtp;
    for (const auto& [name, t] : tensors)
        if (name.starts_with("model.layers.3.")) mtp["model.layers.4." + name.substr(15)] = t;
    const StoredTensor& norm = tensors.at("model.norm.weight");
    mtp["model.layers.4.enorm.weight"] = norm;
    mtp["model.layers.4.hnorm.weight"] = norm;
    mtp["model.layers.4.eh_proj.weight"] = StoredTensor{"BF16", {64, 128}, std::string(64 * 128 * 2, '\0')};
    tensors.insert(mtp.begin(), mtp.end());
    std::string config = config_text();
    replace_once(config, "\"n_group\": 1,", "\"n_group\": 1,\n  \"num_nextn_predict_layers\": 1,");
    test::TempDir dir;
    testing::write_model(dir, config, tensors);
    EXPECT_TRUE(same_bits(testing::all_logits(dir.path(), ids), want));
    const test::CommandResult inspect = test::run_cli("inspect --json --model " + dir.path());
    ASSERT_EQ(inspect.status, 0) << inspect.err;
    EXPECT_NE(inspect.out.find("\"num_nextn_predict_layers\""), std::string::npos);
}

// While the context is shorter than index_topk the indexer keeps every position: those rows are
// the bits of dense attention (index_topk beyond the sequence), and the later rows are not (the
// sparsity really acts).
TEST(GlmDsaCheckpoints, AShortContextKeepsEveryPositionAsDenseAttentionDoes) {
    const std::vector<int32_t> ids = testing::fixture_sequence("glm_moe_dsa");
    auto cfg = parse_glm_dsa_config(testing::parse_config_text(config_text()));
    ASSERT_TRUE(cfg.has_value());
    const size_t topk = static_cast<size_t>(cfg->index_topk), vocab = static_cast<size_t>(cfg->vocab_size);
    ASSERT_LT(topk, ids.size());
    const std::vector<float> sparse = testing::all_logits(testing::fixture_dir("glm_moe_dsa"), ids);
    std::string dense_config = config_text();
    replace_once(dense_config, "\"index_topk\": " + std::to_string(topk), "\"index_topk\": 1000000");
    test::TempDir dir;
    testing::write_model(dir, dense_config, testing::read_fixture_tensors("glm_moe_dsa"));
    const std::vector<float> dense = testing::all_logits(dir.path(), ids);
    ASSERT_EQ(dense.size(), sparse.size());
    const size_t short_rows = topk * vocab;  // positions 0 .. index_topk - 1
    EXPECT_EQ(std::memcmp(dense.data(), sparse.data(), short_rows * sizeof(float)), 0);
    EXPECT_NE(std::memcmp(dense.data() + short_rows, sparse.data() + short_rows, (dense.size() - short_rows) * sizeof(float)), 0);
}

bool quantized(const std::string& name) {
    for (const char* part : {".self_attn.q_a_proj.", ".self_attn.q_b_proj.", ".self_attn.kv_a_proj_with_mqa.",
                             ".self_attn.kv_b_proj.", ".self_attn.o_proj.", ".indexer.wq_b.", ".indexer.wk.",
                             ".mlp.experts.", ".mlp.shared_experts.", ".mlp.gate_proj.", ".mlp.up_proj.",
                             ".mlp.down_proj."})
        if (name.find(part) != std::string::npos) return name.ends_with(".weight");
    return false;
}

// GLM-5-FP8's layout: every linear layer but the router and the indexer's weights_proj in FP8.
// kv_b_proj too, which the absorbed attention reads dequantized.
TEST(GlmDsaCheckpoints, Fp8GivesTheBitsOfItsDequantizedF32Copy) {
    const testing::Fp8Copies copies = testing::make_fp8_copies("glm_moe_dsa", quantized, 24, 40);
    std::string fp8_config = config_text();
    replace_once(fp8_config, "\"architectures\"",
                 "\"quantization_config\": {\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", \"weight_block_size\": [24, 40]},\n"
                 "  \"architectures\"");
    test::TempDir fp8_dir, f32_dir;
    testing::write_model(fp8_dir, fp8_config, copies.fp8);
    testing::write_model(f32_dir, config_text(), copies.dequantized);
    const std::vector<int32_t> ids = testing::fixture_sequence("glm_moe_dsa");
    const std::vector<float> fp8 = testing::all_logits(fp8_dir.path(), ids);
    EXPECT_TRUE(same_bits(fp8, testing::all_logits(f32_dir.path(), ids)));
    EXPECT_GT(copies.fp8_expert_bytes, 0u);
}

}  // namespace
}  // namespace stormo::glm_dsa
