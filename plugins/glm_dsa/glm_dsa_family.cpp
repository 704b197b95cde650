// The GLM-MoE-DSA family's load and the plugin's entry points (the summary and the tensor roles
// are in glm_dsa_summary.cpp and glm_dsa_tensors.cpp).
#include "glm_dsa_family.hpp"

#include "glm_dsa_model.hpp"
#include "stormo/toolkit/plugin_entry.hpp"

namespace stormo::glm_dsa {

Expected<std::unique_ptr<Model>> GlmDsaFamily::load(LoadContext& ctx) const { return GlmDsaModel::load(ctx); }
Expected<std::unique_ptr<DraftModel>> GlmDsaFamily::load_draft(LoadContext& ctx, const Model& main, int index) const {
    return GlmDsaModel::load_draft(ctx, main, index);
}

}  // namespace stormo::glm_dsa

STORMO_FAMILY_PLUGIN(stormo::glm_dsa::GlmDsaFamily, stormo::glm_dsa::kName, "0.2.0",
                     "GLM MoE with DeepSeek sparse attention: MLA with a latent KV cache, the DSA indexer, sigmoid router, shared experts (BF16, FP8)",
                     stormo::glm_dsa::kAccepts)
