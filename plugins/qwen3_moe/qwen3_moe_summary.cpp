// Qwen3-MoE dimensions from config.json. Hub files say `num_experts`, transformers 5 writes
// `num_local_experts`: both are read, and the dimension is listed under the key the file uses.
#include <algorithm>
#include <string>
#include <vector>

#include "qwen3_moe_family.hpp"
#include "stormo/toolkit/config_reader.hpp"

namespace stormo::qwen3_moe {

Expected<ModelSummary> Qwen3MoeFamily::summarize(const ModelConfig& c) const {
    ModelSummary s;
    toolkit::ConfigReader d(c);
    const int64_t hidden = d.positive("hidden_size");
    const int64_t layers = d.positive("num_hidden_layers");
    d.positive("num_attention_heads");
    const int64_t kv_heads = d.positive("num_key_value_heads");
    const int64_t head_dim = d.positive("head_dim");
    const int64_t vocab = d.positive("vocab_size");
    const int64_t experts = d.positive_any({"num_experts", "num_local_experts"});
    const int64_t top_k = d.positive("num_experts_per_tok");
    d.positive("moe_intermediate_size");
    d.integer_or("intermediate_size", 0);
    const int64_t sparse_step = d.integer_or("decoder_sparse_step", 1);
    d.integer_or("max_position_embeddings", 0);
    STORMO_TRY(d.status());
    s.dimensions = d.integers_read();
    if (top_k > experts)
        return fail(ErrorKind::mismatch, c.source() + ": field \"num_experts_per_tok\" (" + std::to_string(top_k) +
                                             ") exceeds the number of experts (" + std::to_string(experts) + ")");
    if (sparse_step < 1)
        return fail(ErrorKind::mismatch, c.source() + ": field \"decoder_sparse_step\" must be at least 1");

    std::vector<int64_t> dense_layers;  // mlp_only_layers: layers with a dense MLP instead of experts
    if (c.has("mlp_only_layers")) {
        STORMO_TRY_ASSIGN(auto v, c.integers("mlp_only_layers"));
        dense_layers = v;
    }
    // transformers' rule: a layer is MoE when it is not listed in mlp_only_layers and
    // (layer + 1) is a multiple of decoder_sparse_step.
    int moe_layers = 0;
    for (int64_t i = 0; i < layers; ++i) {
        const bool listed = std::find(dense_layers.begin(), dense_layers.end(), i) != dense_layers.end();
        if (!listed && (i + 1) % sparse_step == 0) ++moe_layers;
    }
    if (moe_layers < layers && !c.has("intermediate_size"))
        return tl::unexpected(c.missing("intermediate_size"));

    s.n_layers = static_cast<int>(layers);
    s.n_moe_layers = moe_layers;
    s.n_experts = static_cast<int>(experts);
    s.top_k = static_cast<int>(top_k);
    s.hidden_size = static_cast<size_t>(hidden);
    s.vocab_size = static_cast<size_t>(vocab);
    // K and V, kv_heads x head_dim each, on every layer.
    s.kv_floats_per_token = static_cast<size_t>(layers * 2 * kv_heads * head_dim);
    return s;
}

}  // namespace stormo::qwen3_moe
