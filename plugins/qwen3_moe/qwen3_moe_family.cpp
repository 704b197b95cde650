// The Qwen3-MoE family: the config.json summary for `stormo inspect`, the model load, and the
// plugin's entry points.
#include "qwen3_moe_family.hpp"

#include "qwen3_moe_config.hpp"
#include "qwen3_moe_model.hpp"
#include "stormo/toolkit/plugin_entry.hpp"
#include "stormo/toolkit/summary.hpp"

namespace stormo::qwen3_moe {

Expected<ModelSummary> Qwen3MoeFamily::summarize(const ModelConfig& c) const {
    STORMO_TRY_ASSIGN(const Qwen3MoeConfig q, parse_qwen3_moe_config(c));
    // The dimensions as the file writes them, in print order (hub: num_experts; transformers 5:
    // num_local_experts), as the parse read them; K and V on every layer.
    return toolkit::decoder_summary(q, q.dimensions, q.moe_layer_count(),
                                    q.n_layers * 2 * static_cast<int64_t>(q.kv_width()));
}

Expected<std::unique_ptr<Model>> Qwen3MoeFamily::load(LoadContext& ctx) const { return Qwen3MoeModel::load(ctx); }

}  // namespace stormo::qwen3_moe

STORMO_FAMILY_PLUGIN(stormo::qwen3_moe::Qwen3MoeFamily, stormo::qwen3_moe::kName, "0.2.0",
                     "Qwen3-MoE: GQA with QK-norm, softmax top-k router, SwiGLU experts (BF16)",
                     stormo::qwen3_moe::kAccepts)
