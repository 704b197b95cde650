// GLM-MoE-DSA's summary, from the parsed config (glm_dsa_config.hpp): the dimensions as the file
// writes them, the MoE layers by the rule the model loads with. KV per token: the MLA latent
// (kv_lora_rank) and the rope key (qk_rope_head_dim), plus the indexer's key (index_head_dim), on
// every layer.
#include "glm_dsa_config.hpp"
#include "glm_dsa_family.hpp"
#include "stormo/toolkit/summary.hpp"

namespace stormo::glm_dsa {

Expected<ModelSummary> GlmDsaFamily::summarize(const ModelConfig& c) const {
    STORMO_TRY_ASSIGN(const GlmDsaConfig g, parse_glm_dsa_config(c));
    return toolkit::decoder_summary(g, g.dimensions, g.moe_layer_count(),
                                    g.n_layers * (g.kv_lora_rank + g.qk_rope_head_dim + g.index_head_dim));
}

}  // namespace stormo::glm_dsa
