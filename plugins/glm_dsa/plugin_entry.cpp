// The glm_dsa plugin's C entry points, and its load, which this build cannot do yet.
#include "glm_dsa_family.hpp"
#include "stormo/toolkit/plugin_entry.hpp"

namespace stormo::glm_dsa {

Expected<std::unique_ptr<Model>> GlmDsaFamily::load(LoadContext&) const {
    return fail(ErrorKind::unsupported,
                "glm_dsa: the forward pass of this family is not available in this build; supported: gpt_oss");
}

}  // namespace stormo::glm_dsa

STORMO_FAMILY_PLUGIN(stormo::glm_dsa::GlmDsaFamily, stormo::glm_dsa::kName, "0.1.0",
                     "GLM MoE with DeepSeek sparse attention: MLA, DSA indexer, sigmoid router (dimensions and census; no forward pass yet)",
                     stormo::glm_dsa::kAccepts)
