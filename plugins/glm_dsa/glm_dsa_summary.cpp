// GLM-MoE-DSA's summary, from the parsed config (glm_dsa_config.hpp): the dimensions as the file
// writes them, the MoE layers by the rule the model loads with, the KV buffers as the layers
// declare them (glm_dsa_model.hpp's layer_kv), the multi-token-prediction layers after the decoder's
// as draft layers: listed by inspect, not loaded.
#include "glm_dsa_config.hpp"
#include "glm_dsa_family.hpp"
#include "glm_dsa_model.hpp"
#include "stormo/toolkit/summary.hpp"
#include "stormo/toolkit/tensor_roles.hpp"

namespace stormo::glm_dsa {

Expected<ModelSummary> GlmDsaFamily::summarize(const ModelConfig& c) const {
    STORMO_TRY_ASSIGN(const GlmDsaConfig g, parse_glm_dsa_config(c));
    ModelSummary s = toolkit::decoder_summary(g, g.dimensions, g.moe_layer_count(), toolkit::every_layer_kv(g, layer_kv));
    s.draft_layers = toolkit::decoder_layer_prefixes(g.n_layers, g.mtp_layers);
    return s;
}

}  // namespace stormo::glm_dsa
