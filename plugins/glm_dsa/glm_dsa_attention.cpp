// GLM-MoE-DSA attention: the toolkit's multi-head latent attention (toolkit/mla.hpp) over the
// positions the DSA indexer keeps for each row (glm_dsa_indexer.cpp), scale qk_head_dim^-0.5.
// q_a_layernorm and kv_a_layernorm keep GlmMoeDsaRMSNorm's default eps (1e-6, the toolkit's
// default); config.json's rms_norm_eps is for the decoder layers' norms only.
#include "glm_dsa_model.hpp"

namespace stormo::glm_dsa {

Expected<void> GlmDsaModel::attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const {
    const auto select = [this](const toolkit::MlaSelectionInput& in) {
        toolkit::KeptPositions kept = select_positions(in);
        if (in.ctx.tracer != nullptr && in.ctx.tracer->wants(in.layer)) {
            // The indexer's choice per row: kept positions ascending, -1 in the slots beyond them.
            const size_t n = in.positions.size(), topk = static_cast<size_t>(cfg_.index_topk);
            std::vector<float> chosen(n * topk, -1.0f);
            for (size_t r = 0; r < n; ++r)
                for (size_t j = 0; j < kept[r].size() && j < topk; ++j) chosen[r * topk + j] = static_cast<float>(kept[r][j]);
            in.ctx.tracer->record("dsa_topk_idx", in.layer, chosen.data(), n, topk, in.positions);
        }
        return kept;
    };
    return toolkit::build_mla_attention(compute_, layer, ctx, layers_.at(static_cast<size_t>(layer)).mla, mla_options_,
                                        normed, kv, out, select);
}

}  // namespace stormo::glm_dsa
