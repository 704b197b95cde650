#pragma once
// GLM-MoE-DSA hyper-parameters from config.json (GlmMoeDsaConfig / DeepSeek-V3.2's layout): MLA
// ranks and head dimensions, the DSA indexer, the sigmoid router, which layers are dense. Both
// dialects (rope_parameters or rope_theta + rope_scaling). Header-only so the plugin's tests parse
// configs exactly as the plugin does.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stormo/toolkit/config_reader.hpp"

namespace stormo::glm_dsa {

struct GlmDsaConfig {
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;      // dense layers
    int64_t moe_intermediate_size = 0;  // each routed expert (shared ones: times n_shared_experts)
    int64_t n_layers = 0;
    int64_t n_heads = 0;
    int64_t n_kv_heads = 0;  // num_key_value_heads: recognised, not used (MLA expands k and v per head)
    int64_t vocab_size = 0;
    int64_t q_lora_rank = 0;
    int64_t kv_lora_rank = 0;
    int64_t qk_nope_head_dim = 0;
    int64_t qk_rope_head_dim = 0;
    int64_t v_head_dim = 0;
    int64_t n_experts = 0;  // n_routed_experts
    int64_t top_k = 0;
    int64_t n_shared_experts = 0;
    int64_t n_group = 1;
    int64_t topk_group = 1;
    bool norm_topk_prob = true;
    double routed_scaling_factor = 1.0;
    int64_t index_n_heads = 0;
    int64_t index_head_dim = 0;
    int64_t index_topk = 0;
    int64_t mtp_layers = 0;  // num_nextn_predict_layers: recognised, not loaded
    int64_t max_position_embeddings = 0;  // recognised, not a limit here (the session's context is)
    std::vector<bool> moe_layer;  // per layer
    bool attention_bias = false;
    bool tie_word_embeddings = false;
    double rms_norm_eps = 0.0;
    toolkit::RopeParams rope;
    // The integer fields read, under the keys the file used, in order: what `inspect` prints.
    std::vector<std::pair<std::string, int64_t>> dimensions;

    int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
    int64_t moe_layer_count() const { return std::count(moe_layer.begin(), moe_layer.end(), true); }
};

namespace config_detail {

// mlp_layer_types ("dense" / "sparse" per layer, transformers 5) or first_k_dense_replace
// (`first_dense`, read by the caller; absent: -1).
inline std::vector<bool> read_moe_layers(toolkit::ConfigReader& r, int64_t n_layers, int64_t first_dense) {
    std::vector<bool> moe(static_cast<size_t>(std::max<int64_t>(n_layers, 0)), false);
    if (r.has("mlp_layer_types")) {
        const std::vector<std::string> types = r.strings("mlp_layer_types");
        if (!r.ok()) return moe;
        r.require(static_cast<int64_t>(types.size()) == n_layers,
                  "field \"mlp_layer_types\" has " + std::to_string(types.size()) + " entries for " +
                      std::to_string(n_layers) + " layers (num_hidden_layers)");
        for (size_t i = 0; i < types.size() && i < moe.size() && r.ok(); ++i) {
            r.require(types[i] == "dense" || types[i] == "sparse",
                      "field \"mlp_layer_types\"[" + std::to_string(i) + "] is \"" + types[i] +
                          "\", expected \"dense\" or \"sparse\"");
            moe[i] = types[i] == "sparse";
        }
        return moe;
    }
    r.require(first_dense >= 0,
              "neither \"mlp_layer_types\" nor \"first_k_dense_replace\" says which layers are MoE", ErrorKind::missing);
    for (int64_t l = std::max<int64_t>(first_dense, 0); l < n_layers; ++l) moe[static_cast<size_t>(l)] = true;
    return moe;
}

}  // namespace config_detail

inline Expected<GlmDsaConfig> parse_glm_dsa_config(const ModelConfig& c) {
    toolkit::ConfigReader r(c);
    GlmDsaConfig g;
    // In the order `inspect` prints them.
    g.hidden_size = r.positive("hidden_size");
    g.n_layers = r.positive("num_hidden_layers");
    r.silu_activation();
    g.n_heads = r.positive("num_attention_heads");
    g.n_kv_heads = r.integer_or("num_key_value_heads", 0, 1);
    g.vocab_size = r.positive("vocab_size");
    g.kv_lora_rank = r.positive("kv_lora_rank");  // before q_lora_rank, which MLA alone may lack
    g.q_lora_rank = r.positive("q_lora_rank");
    g.qk_nope_head_dim = r.positive("qk_nope_head_dim");
    g.qk_rope_head_dim = r.positive("qk_rope_head_dim");
    g.v_head_dim = r.positive("v_head_dim");
    g.n_experts = r.positive_any({"n_routed_experts", "num_local_experts"});
    g.top_k = r.positive("num_experts_per_tok");
    // Required although GlmMoeDsaConfig has defaults (1 and 2.5): a default guessed here, as 0 and
    // 1 once were, weighs the experts otherwise than the checkpoint's training, with exit 0.
    g.n_shared_experts = r.at_least("n_shared_experts", 0);
    g.moe_intermediate_size = r.positive("moe_intermediate_size");
    g.intermediate_size = r.positive("intermediate_size");
    const int64_t first_dense = r.integer_or("first_k_dense_replace", -1, 0);
    g.n_group = r.integer_or("n_group", 1, 1);
    g.topk_group = r.integer_or("topk_group", 1, 1);
    g.index_n_heads = r.positive("index_n_heads");
    g.index_head_dim = r.positive("index_head_dim");
    g.index_topk = r.positive("index_topk");
    g.max_position_embeddings = r.integer_or("max_position_embeddings", 0, 1);
    g.mtp_layers = r.integer_or("num_nextn_predict_layers", 0, 0);
    g.norm_topk_prob = r.boolean_or("norm_topk_prob", true);
    g.routed_scaling_factor = r.positive_number("routed_scaling_factor");
    g.attention_bias = r.boolean_or("attention_bias", false);
    g.tie_word_embeddings = r.boolean_or("tie_word_embeddings", false);
    g.rms_norm_eps = r.positive_number("rms_norm_eps");
    g.rope = r.rope();
    g.moe_layer = config_detail::read_moe_layers(r, g.n_layers, first_dense);
    g.dimensions = r.integers_read();
    if (!r.ok()) return r.result(std::move(g));
    r.require(g.top_k <= g.n_experts, "num_experts_per_tok (" + std::to_string(g.top_k) +
                                          ") exceeds n_routed_experts (" + std::to_string(g.n_experts) + ")");
    r.require(g.n_experts % g.n_group == 0 && g.topk_group <= g.n_group,
              "n_group (" + std::to_string(g.n_group) + ") must divide n_routed_experts and hold topk_group (" +
                  std::to_string(g.topk_group) + ")");
    r.require(g.qk_rope_head_dim % 2 == 0 && g.qk_rope_head_dim <= g.index_head_dim,
              "qk_rope_head_dim must be even and at most index_head_dim");
    r.require(g.rope.partial_rotary_factor == 1.0, "partial_rotary_factor is not supported by glm_dsa",
              ErrorKind::unsupported);
    r.require(!g.attention_bias, "attention_bias true is not supported by glm_dsa", ErrorKind::unsupported);
    return r.result(std::move(g));
}

}  // namespace stormo::glm_dsa
