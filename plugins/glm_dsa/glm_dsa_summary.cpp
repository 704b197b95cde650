// GLM-MoE-DSA dimensions from config.json. Which layers are MoE: `mlp_layer_types` when the file
// has it (transformers 5 writes it: "dense" / "sparse" per layer), else every layer from
// `first_k_dense_replace` on. KV per token: the MLA latent (kv_lora_rank) and the rope key
// (qk_rope_head_dim), plus the indexer's key (index_head_dim), on every layer.
#include <string>
#include <vector>

#include "glm_dsa_family.hpp"
#include "stormo/toolkit/config_reader.hpp"

namespace stormo::glm_dsa {
namespace {

// Counts MoE layers from mlp_layer_types, checking every entry.
Expected<int> moe_layers_from_types(const ModelConfig& c, int64_t layers) {
    STORMO_TRY_ASSIGN(auto types, c.strings("mlp_layer_types"));
    if (static_cast<int64_t>(types.size()) != layers)
        return fail(ErrorKind::mismatch, c.source() + ": field \"mlp_layer_types\" has " +
                                             std::to_string(types.size()) + " entries for " +
                                             std::to_string(layers) + " layers (num_hidden_layers)");
    int moe = 0;
    for (size_t i = 0; i < types.size(); ++i) {
        const std::string& t = (types)[i];
        if (t == "sparse") ++moe;
        else if (t != "dense")
            return fail(ErrorKind::mismatch, c.source() + ": field \"mlp_layer_types\"[" + std::to_string(i) +
                                                 "] is \"" + t + "\", expected \"dense\" or \"sparse\"");
    }
    return moe;
}

}  // namespace

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
    const bool has_first_dense = d.has("first_k_dense_replace");
    const int64_t first_dense = d.integer_or("first_k_dense_replace", 0, 0);
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

    int moe_layers = 0;
    if (c.has("mlp_layer_types")) {
        STORMO_TRY_ASSIGN(auto m, moe_layers_from_types(c, layers));
        moe_layers = m;
    } else if (has_first_dense) {
        moe_layers = static_cast<int>(layers > first_dense ? layers - first_dense : 0);
    } else {
        return fail(ErrorKind::missing, c.source() + ": neither \"mlp_layer_types\" nor \"first_k_dense_replace\" "
                                                     "says which layers are MoE");
    }

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
