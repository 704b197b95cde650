// GPT-OSS's own pieces: config.json parsing in both dialects (transformers 5 `rope_parameters`, the
// hub's `rope_theta` + `rope_scaling` and `experts_per_token`), quantization_config, and the layout
// of the intermediates the plugin traces, through the real engine on the gpt_oss fixture. The
// shared math (RoPE, attention, routers, SwiGLU) is tested with the toolkit.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "../gpt_oss_config.hpp"
#include "oracle_support.hpp"
#include "stormo/toolkit/router.hpp"

namespace stormo::gpt_oss {
namespace {

using toolkit::topk_indices;

using testing::parse_config_text;

ModelConfig fixture_config() {
    const std::string path = testing::fixture_dir("gpt_oss") + "/config.json";
    return parse_config_text(testing::read_text(path), path);
}

ModelConfig parse_text(const std::string& text) { return parse_config_text(text); }

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
    EXPECT_EQ(g->rope.type, toolkit::RopeType::yarn);
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
    EXPECT_EQ(toolkit::rope_inv_freq(hub->rope, 16), toolkit::rope_inv_freq(v5->rope, 16));

    // The older spelling "type" of rope_scaling is read too; truncate defaults to true as in transformers.
    std::string old = hub_style_config();
    old.replace(old.find("\"rope_type\""), std::string("\"rope_type\"").size(), "\"type\"");
    old.replace(old.find(", \"truncate\": false"), std::string(", \"truncate\": false").size(), "");
    auto older = parse_gpt_oss_config(parse_text(old));
    ASSERT_TRUE(older.has_value()) << older.error().message;
    EXPECT_EQ(older->rope.type, toolkit::RopeType::yarn);
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

TEST(GptOssTrace, TracedIntermediatesHaveTheDocumentedLayout) {
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
