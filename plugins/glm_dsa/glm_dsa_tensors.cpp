// GLM-MoE-DSA tensor roles by checkpoint name. Shared experts are resident dense FFNs; the
// router's weight and its e_score_correction_bias are the router; the DSA indexer is attention.
#include "glm_dsa_family.hpp"
#include "stormo/toolkit/tensor_roles.hpp"

namespace stormo::glm_dsa {

TensorRole GlmDsaFamily::classify(std::string_view n) const { return toolkit::classify_decoder_tensor(n, {".mlp.gate."}); }

}  // namespace stormo::glm_dsa
