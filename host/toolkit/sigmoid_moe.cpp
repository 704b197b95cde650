// DeepSeek-style feed-forward halves (sigmoid_moe.hpp).
#include "stormo/toolkit/sigmoid_moe.hpp"

#include "stormo/toolkit/experts.hpp"
#include "stormo/toolkit/loading.hpp"

namespace stormo::toolkit {

Expected<void> load_sigmoid_moe_ffn(TensorLoader& load, LoadContext& ctx, const std::string& mlp_module, int layer,
                                    bool moe, const SigmoidMoeShape& s, const std::vector<DType>& matrix_dtypes,
                                    const Fp8Blocks& fp8, SigmoidMoeWeights& w, LayerPlan& plan) {
    const int64_t hidden = s.hidden;
    const int64_t inter = moe ? s.moe_intermediate * s.n_shared : s.intermediate;
    const std::string mlp = mlp_module + (moe ? "shared_experts." : "");
    if (!moe || s.n_shared > 0) {
        STORMO_TRY_ASSIGN(w.mlp.gate, load.matrix(mlp + "gate_proj.weight", TensorRole::dense_ffn, inter, hidden));
        STORMO_TRY_ASSIGN(w.mlp.up, load.matrix(mlp + "up_proj.weight", TensorRole::dense_ffn, inter, hidden));
        STORMO_TRY_ASSIGN(w.mlp.down, load.matrix(mlp + "down_proj.weight", TensorRole::dense_ffn, hidden, inter));
    }
    if (!moe) {
        plan.ffn = FfnKind::dense;
        return {};
    }
    plan.ffn = FfnKind::moe;
    plan.n_experts = static_cast<int>(s.n_experts);
    plan.top_k = static_cast<int>(s.top_k);
    plan.shared_experts = s.n_shared > 0;
    STORMO_TRY_ASSIGN(w.router.weight, load.matrix(mlp_module + "gate.weight", TensorRole::router, s.n_experts, hidden));
    STORMO_TRY_ASSIGN(w.router.correction,
                      load.vector(mlp_module + "gate.e_score_correction_bias", TensorRole::router, s.n_experts));
    plan.expert_parts = swiglu_expert_parts(
        ctx, [&](const char* projection) { return mlp_module + "experts.{e}." + projection + ".weight"; }, hidden,
        s.moe_intermediate, matrix_dtypes, fp8);
    return ctx.declare_experts(layer, plan.expert_parts, plan.n_experts);
}

Expected<void> build_dense_or_shared_ffn(const Compute& c, int layer, const SigmoidMoeWeights& w, const std::string& who,
                                         const Rows& in, Rows out) {
    if (w.mlp.gate.data == nullptr)
        return fail(ErrorKind::internal, who + " layer " + std::to_string(layer) + " has no dense MLP or shared experts");
    build_swiglu_mlp(c, w.mlp, in, out);
    return {};
}

}  // namespace stormo::toolkit
