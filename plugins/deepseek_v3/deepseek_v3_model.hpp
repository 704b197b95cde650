#pragma once
// The DeepSeek-V3 model over the family toolkit: multi-head latent attention (toolkit/mla.hpp; the
// session caches only the latent and the rope key per position) with the checkpoints' interleaved
// rope layout and DeepSeek's YaRN softmax scale; the group-limited sigmoid router with correction
// bias, shared experts, and dense first layers.
#include <memory>
#include <vector>

#include "deepseek_v3_config.hpp"
#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"
#include "stormo/toolkit/attention.hpp"
#include "stormo/toolkit/decoder_model.hpp"
#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/fp8.hpp"
#include "stormo/toolkit/loading.hpp"
#include "stormo/toolkit/mla.hpp"
#include "stormo/toolkit/router.hpp"
#include "stormo/toolkit/sigmoid_moe.hpp"

namespace stormo::deepseek_v3 {

struct LayerWeights {
    toolkit::MlaWeights mla;
    toolkit::SigmoidMoeWeights ffn;  // the dense MLP, or the router, shared experts and routed experts' plan
};

// Layer `layer`'s KV buffers (toolkit::mla_kv_buffers): what its LayerPlan declares and what the
// summary plans with.
std::vector<KvBufferDecl> layer_kv(const DeepseekV3Config& c, int layer);

class DeepseekV3Model final : public toolkit::DecoderModel {
public:
    static Expected<std::unique_ptr<Model>> load(LoadContext& ctx);
    // The multi-token-prediction layer `index` as a draft model over `main` (toolkit/mtp.hpp): this
    // class with only layer num_hidden_layers + index loaded is its decoder layer.
    static Expected<std::unique_ptr<DraftModel>> load_draft(LoadContext& ctx, const Model& main, int index);

    Expected<void> attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const override;
    Routing route(int layer, const StepContext& ctx, const Rows& normed) const override;
    Expected<void> expert_ffn(int layer, const ExpertView& expert, const Rows& in, Rows out) const override;
    // Dense layers' MLP, and MoE layers' shared experts (added to the routed sum by the host).
    Expected<void> dense_ffn(int layer, const Rows& in, Rows out) const override;

    const DeepseekV3Config& config() const { return cfg_; }

private:
    DeepseekV3Model(DeepseekV3Config cfg, Compute compute);
    Expected<void> load_layer(LoadContext& ctx, int layer);

    DeepseekV3Config cfg_;
    std::vector<LayerWeights> layers_;
    toolkit::Rope rope_;  // over qk_rope_head_dim
    toolkit::MlaOptions mla_options_;
    toolkit::RouterSpec router_spec_;
    toolkit::Fp8Blocks fp8_;
};

}  // namespace stormo::deepseek_v3
