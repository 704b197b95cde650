// GLM-MoE-DSA's summary, from the parsed config (glm_dsa_config.hpp): the dimensions as the file
// writes them, the MoE layers by the rule the model loads with. KV per token: the MLA latent
// (kv_lora_rank) and the rope key (qk_rope_head_dim), plus the indexer's key (index_head_dim), on
// every layer.
#include "glm_dsa_config.hpp"
#include "glm_dsa_family.hpp"
#include "stormo/toolkit/summary.hpp"

namespace stormo::glm_dsa {

Expected<ModelSummary> GlmDsaFamily::summarize(const ModelConfig& c) const {
    return toolkit::summarize_parsed(c, parse_glm_dsa_config, [](const GlmDsaConfig& g) {
        return toolkit::make_summary(
            g.dimensions, {.n_layers = g.n_layers,
                           .n_moe_layers = g.moe_layer_count(),
                           .n_experts = g.n_experts,
                           .top_k = g.top_k,
                           .hidden_size = g.hidden_size,
                           .vocab_size = g.vocab_size,
                           .kv_floats_per_token = g.n_layers * (g.kv_lora_rank + g.qk_rope_head_dim + g.index_head_dim)});
    });
}

}  // namespace stormo::glm_dsa
