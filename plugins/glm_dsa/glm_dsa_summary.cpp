// GLM-MoE-DSA dimensions from config.json. Which layers are MoE: `mlp_layer_types` when the file
// has it (transformers 5 writes it: "dense" / "sparse" per layer), else every layer from
// `first_k_dense_replace` on. KV per token: the MLA latent (kv_lora_rank) and the rope key
// (qk_rope_head_dim), plus the indexer's key (index_head_dim), on every layer.
#include <algorithm>
#include <string>
#include <vector>

#include "glm_dsa_config.hpp"
#include "glm_dsa_family.hpp"
#include "stormo/toolkit/config_reader.hpp"

namespace stormo::glm_dsa {
Expected<ModelSummary> GlmDsaFamily::summarize(const ModelConfig& c) const {
    ModelSummary s;
    toolkit::ConfigReader d(c);
    const int64_t hidden = d.positive("hidden_size");
    const int64_t layers = d.positive("num_hidden_layers");
    d.positive("num_attention_heads");
    d.positive("num_key_value_heads");
    const int64_t vocab = d.positive("vocab_size");
    d.integer_or("q_lora_rank", 0, 1);  // absent or null for models without a query compression
    const int64_t kv_lora_rank = d.positive("kv_lora_rank");
    d.positive("qk_nope_head_dim");
    const int64_t rope_dim = d.positive("qk_rope_head_dim");
    d.positive("v_head_dim");
    const int64_t experts = d.positive("n_routed_experts");
    const int64_t top_k = d.positive("num_experts_per_tok");
    d.at_least("n_shared_experts", 0);
    d.positive("moe_intermediate_size");
    d.positive("intermediate_size");
    d.integer_or("first_k_dense_replace", 0, 0);
    d.integer_or("n_group", 1, 1);
    d.integer_or("topk_group", 1, 1);
    d.positive("index_n_heads");
    const int64_t index_head_dim = d.positive("index_head_dim");
    d.positive("index_topk");
    d.integer_or("max_position_embeddings", 0, 1);
    d.integer_or("num_nextn_predict_layers", 0, 0);  // multi-token-prediction layers: listed, not loaded
    STORMO_TRY(d.status());
    s.dimensions = d.integers_read();
    if (top_k > experts)
        return fail(ErrorKind::mismatch, c.source() + ": field \"num_experts_per_tok\" (" + std::to_string(top_k) +
                                             ") exceeds n_routed_experts (" + std::to_string(experts) + ")");

    // Which layers are MoE, by the rule the model loads with.
    toolkit::ConfigReader layer_kinds(c);
    const std::vector<bool> moe = config_detail::read_moe_layers(layer_kinds, layers);
    STORMO_TRY(layer_kinds.status());
    const int moe_layers = static_cast<int>(std::count(moe.begin(), moe.end(), true));

    s.n_layers = static_cast<int>(layers);
    s.n_moe_layers = moe_layers;
    s.n_experts = static_cast<int>(experts);
    s.top_k = static_cast<int>(top_k);
    s.hidden_size = static_cast<size_t>(hidden);
    s.vocab_size = static_cast<size_t>(vocab);
    s.kv_floats_per_token = static_cast<size_t>(layers * (kv_lora_rank + rope_dim + index_head_dim));
    return s;
}

}  // namespace stormo::glm_dsa
