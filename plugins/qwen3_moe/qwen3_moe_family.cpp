// The Qwen3-MoE family: the config.json summary for `stormo inspect`, the model load, and the
// plugin's entry points.
#include "qwen3_moe_family.hpp"

#include "qwen3_moe_config.hpp"
#include "qwen3_moe_model.hpp"
#include "stormo/toolkit/config_reader.hpp"
#include "stormo/toolkit/plugin_entry.hpp"

namespace stormo::qwen3_moe {

Expected<ModelSummary> Qwen3MoeFamily::summarize(const ModelConfig& c) const {
    STORMO_TRY_ASSIGN(const Qwen3MoeConfig q, parse_qwen3_moe_config(c));
    // The dimensions as the file writes them, in print order (hub: num_experts; transformers 5:
    // num_local_experts); the optional ones only when present.
    toolkit::ConfigReader d(c);
    for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                            "head_dim", "vocab_size"})
        d.positive(key);
    d.positive_any({"num_experts", "num_local_experts"});
    d.positive("num_experts_per_tok");
    d.positive("moe_intermediate_size");
    for (const char* key : {"intermediate_size", "decoder_sparse_step", "max_position_embeddings"}) d.integer_or(key, 0);
    STORMO_TRY(d.status());
    ModelSummary s;
    s.dimensions = d.integers_read();
    s.n_layers = static_cast<int>(q.n_layers);
    s.n_moe_layers = static_cast<int>(q.moe_layer_count());
    s.n_experts = static_cast<int>(q.n_experts);
    s.top_k = static_cast<int>(q.top_k);
    s.hidden_size = static_cast<size_t>(q.hidden_size);
    s.vocab_size = static_cast<size_t>(q.vocab_size);
    s.kv_floats_per_token = static_cast<size_t>(q.n_layers) * 2 * q.kv_width();  // K and V on every layer
    return s;
}

Expected<std::unique_ptr<Model>> Qwen3MoeFamily::load(LoadContext& ctx) const { return Qwen3MoeModel::load(ctx); }

}  // namespace stormo::qwen3_moe

STORMO_FAMILY_PLUGIN(stormo::qwen3_moe::Qwen3MoeFamily, stormo::qwen3_moe::kName, "0.2.0",
                     "Qwen3-MoE: GQA with QK-norm, softmax top-k router, SwiGLU experts (BF16)",
                     stormo::qwen3_moe::kAccepts)
