// Qwen3-MoE's own pieces: config.json in both dialects, the rule that makes a layer dense, and
// checkpoints rewritten from the qwen3_moe fixture to check, to the bit, what the fixtures cannot:
// dense MLP layers where mlp_only_layers or decoder_sparse_step put them, and tied embeddings.
// (The fixtures themselves run in the oracle, forced-kernel and placement suites.)
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../qwen3_moe_config.hpp"
#include "qwen3_fixture.hpp"

namespace stormo::qwen3_moe {
namespace {

using namespace fixture;  // the qwen3_moe fixture (qwen3_fixture.hpp)

TEST(Qwen3MoeConfig, FixtureAndHubDialectsGiveTheSameParameters) {
    auto v5 = parse_qwen3_moe_config(parse_text(fixture_config_text()));
    ASSERT_TRUE(v5.has_value()) << v5.error().message;
    EXPECT_EQ(v5->hidden_size, 64);
    EXPECT_EQ(v5->n_layers, 3);
    EXPECT_EQ(v5->n_heads, 4);
    EXPECT_EQ(v5->n_kv_heads, 2);
    EXPECT_EQ(v5->head_dim, 32);
    EXPECT_EQ(v5->n_experts, 8);
    EXPECT_EQ(v5->top_k, 2);
    EXPECT_EQ(v5->moe_intermediate_size, 32);
    EXPECT_TRUE(v5->norm_topk_prob);
    EXPECT_FALSE(v5->tie_word_embeddings);
    EXPECT_EQ(v5->rope.theta, 1e6);
    EXPECT_EQ(v5->moe_layer_count(), 3);

    // The hub's spelling: num_experts, top-level rope_theta and a null rope_scaling.
    std::string hub = fixture_config_text();
    replace_once(hub, "\"num_local_experts\": 8", "\"num_experts\": 8");
    replace_once(hub, "\"rope_parameters\": {\n    \"rope_theta\": 1000000.0,\n    \"rope_type\": \"default\"\n  }",
                 "\"rope_theta\": 1000000.0, \"rope_scaling\": null");
    auto h = parse_qwen3_moe_config(parse_text(hub));
    ASSERT_TRUE(h.has_value()) << h.error().message;
    EXPECT_EQ(h->n_experts, v5->n_experts);
    EXPECT_EQ(h->rope.theta, v5->rope.theta);
    EXPECT_EQ(h->rope.type, v5->rope.type);
}

TEST(Qwen3MoeConfig, ProblemsNameTheField) {
    std::string no_moe_inter = fixture_config_text();
    replace_once(no_moe_inter, "\"moe_intermediate_size\": 32,", "");
    auto a = parse_qwen3_moe_config(parse_text(no_moe_inter));
    ASSERT_FALSE(a.has_value());
    EXPECT_EQ(a.error().kind, ErrorKind::missing);
    EXPECT_NE(a.error().message.find("moe_intermediate_size"), std::string::npos) << a.error().message;

    std::string out_of_range = fixture_config_text();
    replace_once(out_of_range, "\"mlp_only_layers\": []", "\"mlp_only_layers\": [7]");
    auto b = parse_qwen3_moe_config(parse_text(out_of_range));
    ASSERT_FALSE(b.has_value());
    EXPECT_NE(b.error().message.find("mlp_only_layers"), std::string::npos) << b.error().message;

    // A dense layer needs intermediate_size.
    std::string dense_without = fixture_config_text();
    replace_once(dense_without, "\"mlp_only_layers\": []", "\"mlp_only_layers\": [0]");
    replace_once(dense_without, "\"intermediate_size\": 128,", "");
    auto c = parse_qwen3_moe_config(parse_text(dense_without));
    ASSERT_FALSE(c.has_value());
    EXPECT_NE(c.error().message.find("intermediate_size"), std::string::npos) << c.error().message;

    std::string sliding = fixture_config_text();
    replace_once(sliding, "\"use_sliding_window\": false", "\"use_sliding_window\": true");
    auto d = parse_qwen3_moe_config(parse_text(sliding));
    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error().kind, ErrorKind::unsupported);
}

TEST(Qwen3MoeConfig, WhichLayersAreDense) {
    Qwen3MoeConfig q;
    q.n_layers = 6;
    q.n_experts = 4;
    q.decoder_sparse_step = 2;
    q.mlp_only_layers = {3};
    // (layer + 1) % 2 == 0 -> 1, 3, 5; 3 is listed dense.
    const std::vector<bool> want = {false, true, false, false, false, true};
    for (int64_t l = 0; l < 6; ++l) EXPECT_EQ(q.is_moe(l), want[static_cast<size_t>(l)]) << l;
    EXPECT_EQ(q.moe_layer_count(), 2);
}

// ---- Rewritten checkpoints (checkpoint_rewrite.hpp) -------------------------------------------

std::string layer_key(int l, const std::string& rest) { return "model.layers." + std::to_string(l) + ".mlp." + rest; }

// The fixture with one expert per layer (expert 0, router row 0) and top-k 1: the router's weight is
// then exactly 1, so every MoE layer computes expert 0 as a dense MLP would, to the bit.
std::map<std::string, StoredTensor> one_expert_tensors(const std::map<std::string, StoredTensor>& all) {
    std::map<std::string, StoredTensor> out;
    for (const auto& [name, t] : all) {
        if (name.find(".mlp.experts.") != std::string::npos && name.find(".mlp.experts.0.") == std::string::npos) continue;
        StoredTensor copy = t;
        if (name.ends_with(".mlp.gate.weight")) {
            copy.shape = {1, t.shape[1]};
            copy.bytes = t.bytes.substr(0, t.bytes.size() / static_cast<size_t>(t.shape[0]));
        }
        out[name] = std::move(copy);
    }
    return out;
}

std::string one_expert_config() {
    std::string text = fixture_config_text();
    replace_once(text, "\"num_local_experts\": 8", "\"num_local_experts\": 1");
    replace_once(text, "\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 1");
    // A dense layer made of expert 0 has the experts' width.
    replace_once(text, "\"intermediate_size\": 128", "\"intermediate_size\": 32");
    return text;
}

// Layer l's MoE tensors replaced by a dense MLP holding expert 0's matrices.
void make_dense(std::map<std::string, StoredTensor>& tensors, int l) {
    for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
        const std::string from = layer_key(l, std::string("experts.0.") + proj + ".weight");
        tensors[layer_key(l, std::string(proj) + ".weight")] = tensors.at(from);
        tensors.erase(from);
    }
    tensors.erase(layer_key(l, "gate.weight"));
}

TEST(Qwen3MoeCheckpoints, DenseLayersWhereMlpOnlyLayersAndDecoderSparseStepSay) {
    const auto all = read_fixture_tensors();
    const auto moe = one_expert_tensors(all);
    const std::vector<int32_t> ids = fixture_sequence();
    test::TempDir moe_dir;
    write_model(moe_dir, one_expert_config(), moe);
    const std::vector<float> want = all_logits(moe_dir.path(), ids);

    // mlp_only_layers: [1] makes layer 1 dense.
    auto listed = moe;
    make_dense(listed, 1);
    std::string listed_config = one_expert_config();
    replace_once(listed_config, "\"mlp_only_layers\": []", "\"mlp_only_layers\": [1]");
    test::TempDir listed_dir;
    write_model(listed_dir, listed_config, listed);
    EXPECT_TRUE(same_bits(all_logits(listed_dir.path(), ids), want)) << "mlp_only_layers";

    // decoder_sparse_step 2: layers 0 and 2 dense, layer 1 MoE.
    auto stepped = moe;
    make_dense(stepped, 0);
    make_dense(stepped, 2);
    std::string stepped_config = one_expert_config();
    replace_once(stepped_config, "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2");
    test::TempDir stepped_dir;
    write_model(stepped_dir, stepped_config, stepped);
    EXPECT_TRUE(same_bits(all_logits(stepped_dir.path(), ids), want)) << "decoder_sparse_step";

    // A dense layer whose MLP is missing fails the load naming the tensor.
    auto missing = listed;
    missing.erase(layer_key(1, "down_proj.weight"));
    test::TempDir missing_dir;
    write_model(missing_dir, listed_config, missing);
    auto engine = testing::try_open_engine(missing_dir.path(), "reference", 1);
    ASSERT_FALSE(engine.has_value());
    EXPECT_NE(engine.error().message.find("model.layers.1.mlp.down_proj.weight"), std::string::npos)
        << engine.error().message;
}

TEST(Qwen3MoeCheckpoints, TiedEmbeddingsUseTheEmbeddingAsTheHead) {
    auto tensors = read_fixture_tensors();
    const std::vector<int32_t> ids = fixture_sequence();
    // Untied, with lm_head a copy of the embedding ...
    tensors["lm_head.weight"] = tensors.at("model.embed_tokens.weight");
    test::TempDir copy_dir;
    write_model(copy_dir, fixture_config_text(), tensors);
    // ... equals tied without an lm_head tensor.
    tensors.erase("lm_head.weight");
    std::string tied = fixture_config_text();
    replace_once(tied, "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
    test::TempDir tied_dir;
    write_model(tied_dir, tied, tensors);
    EXPECT_TRUE(same_bits(all_logits(tied_dir.path(), ids), all_logits(copy_dir.path(), ids)));
}

}  // namespace
}  // namespace stormo::qwen3_moe
