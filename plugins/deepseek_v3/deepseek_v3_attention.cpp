// DeepSeek-V3 attention: the toolkit's multi-head latent attention (toolkit/mla.hpp) over every
// past position. q_a_layernorm and kv_a_layernorm keep DeepseekV3RMSNorm's default eps (1e-6, the
// toolkit's default); config.json's rms_norm_eps is for the decoder layers' norms only.
#include "deepseek_v3_model.hpp"

namespace stormo::deepseek_v3 {

Expected<void> DeepseekV3Model::attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv,
                                          Rows out) const {
    return toolkit::build_mla_attention(compute_, layer, ctx, layers_.at(static_cast<size_t>(layer)).mla, mla_options_,
                                        normed, kv, out);
}

}  // namespace stormo::deepseek_v3
