// The DeepSeek-V3 family's load and the plugin's entry points (the summary and the tensor roles
// are in deepseek_v3_summary.cpp and deepseek_v3_tensors.cpp).
#include "deepseek_v3_family.hpp"

#include "deepseek_v3_model.hpp"
#include "stormo/toolkit/plugin_entry.hpp"

namespace stormo::deepseek_v3 {

Expected<std::unique_ptr<Model>> DeepseekV3Family::load(LoadContext& ctx) const { return DeepseekV3Model::load(ctx); }
Expected<std::unique_ptr<DraftModel>> DeepseekV3Family::load_draft(LoadContext& ctx, const Model& main, int index) const {
    return DeepseekV3Model::load_draft(ctx, main, index);
}

}  // namespace stormo::deepseek_v3

STORMO_FAMILY_PLUGIN(stormo::deepseek_v3::DeepseekV3Family, stormo::deepseek_v3::kName, "0.1.0",
                     "DeepSeek-V3 / R1 / Kimi-K2: MLA with a latent KV cache, group-limited sigmoid router, shared experts (BF16, FP8)",
                     stormo::deepseek_v3::kAccepts)
