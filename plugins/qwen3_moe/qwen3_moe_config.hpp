#pragma once
// Qwen3-MoE hyper-parameters from config.json, in either dialect (the hub's `num_experts` and
// `rope_theta`, transformers 5's `num_local_experts` and `rope_parameters`). Defaults are the ones
// Qwen3MoeConfig itself applies when a field is absent (decoder_sparse_step 1, mlp_only_layers
// empty, norm_topk_prob true, untied embeddings, no attention bias); every dimension is read.
// Header-only so the plugin's unit tests parse configs exactly as the plugin does.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stormo/toolkit/config_reader.hpp"

namespace stormo::qwen3_moe {

struct Qwen3MoeConfig {
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;      // dense MLP layers (0 when absent; required when a layer is dense)
    int64_t moe_intermediate_size = 0;  // each routed expert
    int64_t n_layers = 0;
    int64_t n_heads = 0;
    int64_t n_kv_heads = 0;
    int64_t head_dim = 0;
    int64_t vocab_size = 0;
    int64_t n_experts = 0;
    int64_t top_k = 0;
    int64_t decoder_sparse_step = 1;
    std::vector<int64_t> mlp_only_layers;
    bool norm_topk_prob = true;
    bool attention_bias = false;
    bool tie_word_embeddings = false;
    double rms_norm_eps = 0.0;
    toolkit::RopeParams rope;
    int64_t max_position_embeddings = 0;  // recognised, not a limit here (the session's context is)
    // The integer fields read, under the keys the file used, in order: what `inspect` prints.
    std::vector<std::pair<std::string, int64_t>> dimensions;

    // transformers' rule: a layer is MoE when mlp_only_layers does not list it and
    // (layer + 1) is a multiple of decoder_sparse_step.
    bool is_moe(int64_t layer) const {
        const bool listed = std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end();
        return !listed && n_experts > 0 && (layer + 1) % decoder_sparse_step == 0;
    }
    // Counted from the listed layers rather than layer by layer: n_layers is not yet checked
    // against the checkpoint here, and a broken one must not cost a loop over it.
    int64_t moe_layer_count() const {
        if (n_experts <= 0 || decoder_sparse_step <= 0) return 0;
        std::vector<int64_t> listed(mlp_only_layers.begin(), mlp_only_layers.end());
        std::sort(listed.begin(), listed.end());
        listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
        int64_t n = n_layers / decoder_sparse_step;
        for (const int64_t l : listed) n -= (l >= 0 && l < n_layers && (l + 1) % decoder_sparse_step == 0) ? 1 : 0;
        return n;
    }
    size_t q_width() const { return static_cast<size_t>(n_heads * head_dim); }
    size_t kv_width() const { return static_cast<size_t>(n_kv_heads * head_dim); }
};

inline Expected<Qwen3MoeConfig> parse_qwen3_moe_config(const ModelConfig& c) {
    toolkit::ConfigReader r(c);
    Qwen3MoeConfig q;
    q.hidden_size = r.positive("hidden_size");
    q.n_layers = r.positive("num_hidden_layers");
    r.silu_activation();
    q.n_heads = r.positive("num_attention_heads");
    q.n_kv_heads = r.positive("num_key_value_heads");
    q.head_dim = r.positive("head_dim");
    q.vocab_size = r.positive("vocab_size");
    q.n_experts = r.positive_any({"num_experts", "num_local_experts"});
    q.top_k = r.positive("num_experts_per_tok");
    q.moe_intermediate_size = r.positive("moe_intermediate_size");
    q.intermediate_size = r.integer_or("intermediate_size", 0, 0);
    q.decoder_sparse_step = r.integer_or("decoder_sparse_step", 1, 1);
    q.max_position_embeddings = r.integer_or("max_position_embeddings", 0, 0);
    q.mlp_only_layers = r.integers_or_empty("mlp_only_layers");
    q.norm_topk_prob = r.boolean_or("norm_topk_prob", true);
    q.attention_bias = r.boolean_or("attention_bias", false);
    q.tie_word_embeddings = r.boolean_or("tie_word_embeddings", false);
    q.rms_norm_eps = r.positive_number("rms_norm_eps");
    q.rope = r.rope();
    q.dimensions = r.integers_read();
    if (!r.ok()) return r.result(std::move(q));
    r.require(q.intermediate_size > 0 || q.moe_layer_count() == q.n_layers,
              "field \"intermediate_size\" is missing or 0, and a layer is dense (mlp_only_layers, decoder_sparse_step)",
              ErrorKind::missing);
    r.require(q.top_k <= q.n_experts, "num_experts_per_tok (" + std::to_string(q.top_k) +
                                          ") exceeds the number of experts (" + std::to_string(q.n_experts) + ")");
    r.require(q.n_heads % q.n_kv_heads == 0, "num_attention_heads (" + std::to_string(q.n_heads) +
                                                 ") is not a multiple of num_key_value_heads (" +
                                                 std::to_string(q.n_kv_heads) + ")");
    r.require(q.head_dim % 2 == 0, "field \"head_dim\" must be even for the rotation, found " + std::to_string(q.head_dim));
    for (int64_t l : q.mlp_only_layers)
        r.require(l >= 0 && l < q.n_layers, "field \"mlp_only_layers\" lists layer " + std::to_string(l) + " of " +
                                                std::to_string(q.n_layers));
    // Qwen3-MoE's sliding window (use_sliding_window) is off in every published checkpoint, and
    // transformers' eager path does not apply it either; refuse rather than guess.
    r.require(!r.boolean_or("use_sliding_window", false),
              "use_sliding_window true is not supported by qwen3_moe (no published checkpoint uses it)",
              ErrorKind::unsupported);
    return r.result(std::move(q));
}

}  // namespace stormo::qwen3_moe
