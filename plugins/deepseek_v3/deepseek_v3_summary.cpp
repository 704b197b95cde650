// DeepSeek-V3's summary, from the parsed config (deepseek_v3_config.hpp): the dimensions as the
// file writes them, the MoE layers by first_k_dense_replace, the KV buffers as the layers declare
// them (deepseek_v3_model.hpp's layer_kv), the multi-token-prediction layers (the hub's
// model.layers.61.*) as draft layers: listed by inspect, not loaded.
#include "deepseek_v3_config.hpp"
#include "deepseek_v3_family.hpp"
#include "deepseek_v3_model.hpp"
#include "stormo/toolkit/summary.hpp"
#include "stormo/toolkit/tensor_roles.hpp"

namespace stormo::deepseek_v3 {

Expected<ModelSummary> DeepseekV3Family::summarize(const ModelConfig& c) const {
    STORMO_TRY_ASSIGN(const DeepseekV3Config d, parse_deepseek_v3_config(c));
    ModelSummary s = toolkit::decoder_summary(d, d.dimensions, d.moe_layer_count(), toolkit::every_layer_kv(d, layer_kv));
    s.draft_layers = toolkit::decoder_layer_prefixes(d.n_layers, d.mtp_layers);
    return s;
}

}  // namespace stormo::deepseek_v3
