// The qwen3_moe plugin's C entry points, and its load, which this build cannot do yet.
#include "qwen3_moe_family.hpp"
#include "stormo/toolkit/plugin_entry.hpp"

namespace stormo::qwen3_moe {

Expected<std::unique_ptr<Model>> Qwen3MoeFamily::load(LoadContext&) const {
    return fail(ErrorKind::unsupported,
                "qwen3_moe: the forward pass of this family is not available in this build; supported: gpt_oss");
}

}  // namespace stormo::qwen3_moe

STORMO_FAMILY_PLUGIN(stormo::qwen3_moe::Qwen3MoeFamily, stormo::qwen3_moe::kName, "0.1.0",
                     "Qwen3-MoE: GQA with QK-norm, softmax top-k router (dimensions and census; no forward pass yet)",
                     stormo::qwen3_moe::kAccepts)
