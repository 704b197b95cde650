// GLM-MoE-DSA's summary, from the parsed config (glm_dsa_config.hpp): the dimensions as the file
// writes them, the MoE layers by the rule the model loads with, the KV buffers as the layers
// declare them (glm_dsa_model.hpp's layer_kv).
#include "glm_dsa_config.hpp"
#include "glm_dsa_family.hpp"
#include "glm_dsa_model.hpp"
#include "stormo/toolkit/summary.hpp"

namespace stormo::glm_dsa {

Expected<ModelSummary> GlmDsaFamily::summarize(const ModelConfig& c) const {
    STORMO_TRY_ASSIGN(const GlmDsaConfig g, parse_glm_dsa_config(c));
    return toolkit::decoder_summary(g, g.dimensions, g.moe_layer_count(), toolkit::every_layer_kv(g, layer_kv));
}

}  // namespace stormo::glm_dsa
