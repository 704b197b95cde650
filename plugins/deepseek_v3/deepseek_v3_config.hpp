#pragma once
// DeepSeek-V3 hyper-parameters from config.json (DeepseekV3Config): MLA ranks and head dimensions
// (q_lora_rank null: a plain q_proj), the rope layout, the group-limited sigmoid router, shared
// experts, which layers are dense. Both dialects (transformers 5's rope_parameters, the hub's
// rope_theta + rope_scaling with "type": "yarn"). Header-only so the plugin's tests parse configs
// exactly as the plugin does.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stormo/toolkit/config_reader.hpp"

namespace stormo::deepseek_v3 {

struct DeepseekV3Config {
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;      // dense layers
    int64_t moe_intermediate_size = 0;  // each routed expert (shared ones: times n_shared_experts)
    int64_t n_layers = 0;
    int64_t n_heads = 0;
    int64_t n_kv_heads = 0;  // num_key_value_heads: recognised, not used (MLA expands k and v per head)
    int64_t vocab_size = 0;
    int64_t q_lora_rank = 0;  // 0: q_lora_rank null or absent, a plain q_proj
    int64_t kv_lora_rank = 0;
    int64_t qk_nope_head_dim = 0;
    int64_t qk_rope_head_dim = 0;
    int64_t v_head_dim = 0;
    int64_t n_experts = 0;  // n_routed_experts
    int64_t top_k = 0;
    int64_t n_shared_experts = 0;
    int64_t n_group = 0;
    int64_t topk_group = 0;
    int64_t first_k_dense_replace = 0;
    bool norm_topk_prob = true;
    double routed_scaling_factor = 1.0;
    bool rope_interleave = true;  // transformers' default, and every DeepSeek-V3 checkpoint's layout
    int64_t mtp_layers = 0;  // num_nextn_predict_layers: recognised, not loaded
    int64_t max_position_embeddings = 0;  // recognised, not a limit here (the session's context is)
    bool attention_bias = false;
    bool tie_word_embeddings = false;
    double rms_norm_eps = 0.0;
    toolkit::RopeParams rope;
    // The integer fields read, under the keys the file used, in order: what `inspect` prints.
    std::vector<std::pair<std::string, int64_t>> dimensions;

    int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
    bool is_moe_layer(int64_t layer) const { return layer >= first_k_dense_replace; }
    int64_t moe_layer_count() const { return std::max<int64_t>(n_layers - first_k_dense_replace, 0); }
};

// The attention's softmax scale: qk_head_dim^-0.5, times mscale(factor, mscale_all_dim)^2 when the
// RoPE is scaled and mscale_all_dim is set (DeepseekV3Attention; in double, as Python computes it).
inline double softmax_scale(const DeepseekV3Config& c) {
    double scale = std::pow(static_cast<double>(c.qk_head_dim()), -0.5);
    const double mscale_all_dim = c.rope.mscale_all_dim.value_or(0.0);
    if (c.rope.type != toolkit::RopeType::standard && mscale_all_dim != 0.0) {
        const double m = toolkit::yarn_get_mscale(c.rope.factor, mscale_all_dim);
        scale = scale * m * m;
    }
    return scale;
}

inline Expected<DeepseekV3Config> parse_deepseek_v3_config(const ModelConfig& c) {
    toolkit::ConfigReader r(c);
    DeepseekV3Config d;
    // In the order `inspect` prints them. The router's and the layout's fields are required: a
    // default guessed here would route differently from the checkpoint's training.
    d.hidden_size = r.positive("hidden_size");
    d.n_layers = r.positive("num_hidden_layers");
    r.silu_activation();
    d.n_heads = r.positive("num_attention_heads");
    d.n_kv_heads = r.integer_or("num_key_value_heads", 0, 1);
    d.vocab_size = r.positive("vocab_size");
    d.kv_lora_rank = r.positive("kv_lora_rank");
    d.q_lora_rank = r.integer_or("q_lora_rank", 0, 1);
    d.qk_nope_head_dim = r.positive("qk_nope_head_dim");
    d.qk_rope_head_dim = r.positive("qk_rope_head_dim");
    d.v_head_dim = r.positive("v_head_dim");
    d.n_experts = r.positive("n_routed_experts");
    d.top_k = r.positive("num_experts_per_tok");
    d.n_shared_experts = r.at_least("n_shared_experts", 0);
    d.moe_intermediate_size = r.positive("moe_intermediate_size");
    d.intermediate_size = r.positive("intermediate_size");
    d.first_k_dense_replace = r.at_least("first_k_dense_replace", 0);
    d.n_group = r.positive("n_group");
    d.topk_group = r.positive("topk_group");
    d.max_position_embeddings = r.integer_or("max_position_embeddings", 0, 1);
    d.mtp_layers = r.integer_or("num_nextn_predict_layers", 0, 0);
    d.norm_topk_prob = r.boolean_or("norm_topk_prob", true);
    d.routed_scaling_factor = r.positive_number("routed_scaling_factor");
    d.rope_interleave = r.boolean_or("rope_interleave", true);
    d.attention_bias = r.boolean_or("attention_bias", false);
    d.tie_word_embeddings = r.boolean_or("tie_word_embeddings", false);
    d.rms_norm_eps = r.positive_number("rms_norm_eps");
    d.rope = r.rope();
    d.dimensions = r.integers_read();
    if (!r.ok()) return r.result(std::move(d));
    r.require(d.top_k <= d.n_experts, "num_experts_per_tok (" + std::to_string(d.top_k) +
                                          ") exceeds n_routed_experts (" + std::to_string(d.n_experts) + ")");
    r.require(d.n_experts % d.n_group == 0 && d.topk_group <= d.n_group,
              "n_group (" + std::to_string(d.n_group) + ") must divide n_routed_experts (" +
                  std::to_string(d.n_experts) + ") and hold topk_group (" + std::to_string(d.topk_group) + ")");
    r.require(d.n_group == 1 || d.n_experts / d.n_group >= 2,
              "n_group (" + std::to_string(d.n_group) + ") leaves fewer than 2 experts a group: a group is scored "
                  "by its two best");
    r.require(d.first_k_dense_replace <= d.n_layers,
              "first_k_dense_replace (" + std::to_string(d.first_k_dense_replace) + ") exceeds num_hidden_layers (" +
                  std::to_string(d.n_layers) + ")");
    r.require(d.qk_rope_head_dim % 2 == 0, "qk_rope_head_dim must be even");
    r.require(d.rope.partial_rotary_factor == 1.0, "partial_rotary_factor is not supported by deepseek_v3",
              ErrorKind::unsupported);
    r.require(!d.attention_bias, "attention_bias true is not supported by deepseek_v3", ErrorKind::unsupported);
    return r.result(std::move(d));
}

}  // namespace stormo::deepseek_v3
