// DeepSeek-V3 tensor roles by checkpoint name. Shared experts are resident dense FFNs; the
// router's weight and its e_score_correction_bias are the router.
#include "deepseek_v3_family.hpp"
#include "stormo/toolkit/tensor_roles.hpp"

namespace stormo::deepseek_v3 {

TensorRole DeepseekV3Family::classify(std::string_view n) const { return toolkit::classify_decoder_tensor(n, {".mlp.gate."}); }

}  // namespace stormo::deepseek_v3
