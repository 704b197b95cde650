// DeepSeek-V3's summary, from the parsed config (deepseek_v3_config.hpp): the dimensions as the
// file writes them, the MoE layers by first_k_dense_replace, the KV buffers as the layers declare
// them (deepseek_v3_model.hpp's layer_kv).
#include "deepseek_v3_config.hpp"
#include "deepseek_v3_family.hpp"
#include "deepseek_v3_model.hpp"
#include "stormo/toolkit/summary.hpp"

namespace stormo::deepseek_v3 {

Expected<ModelSummary> DeepseekV3Family::summarize(const ModelConfig& c) const {
    STORMO_TRY_ASSIGN(const DeepseekV3Config d, parse_deepseek_v3_config(c));
    return toolkit::decoder_summary(d, d.dimensions, d.moe_layer_count(), toolkit::every_layer_kv(d, layer_kv));
}

}  // namespace stormo::deepseek_v3
