// GLM-MoE-DSA attention: multi-head latent attention (MLA) with the DSA indexer's sparse mask.
//   q:  x -> q_a_proj -> RMSNorm (q_resid) -> q_b_proj -> per head [nope | rope], RoPE on the rope part
//   kv: x -> kv_a_proj_with_mqa -> [latent | rope key]; RMSNorm(latent); RoPE on the single rope key
//   k, v of a key position: kv_b_proj(latent) -> per head [k_nope | v]; k = [k_nope | rope key]
//   scores over the positions the indexer keeps (glm_dsa_indexer.cpp), scale qk_head_dim^-0.5,
//   softmax, sum of v, o_proj.
// The session caches per position only the latent, the rope key and the indexer's key. Attention
// runs with the weights absorbed, for every block size (so batched prefill and token-by-token
// decode give the same bits): per head the query absorbs the K half of kv_b_proj
// (q_lat = W_kb^T q_nope, so q_nope . k_nope = q_lat . latent), the probabilities pool the latents,
// and the V half of kv_b_proj is applied once to the pooled latent. The expanded path (k_nope and v
// of every key) is the definition transformers writes; it runs when the tracer asks for
// "attn_out_expanded", and a test holds the two paths together on every fixture.
#include <algorithm>
#include <cmath>

#include "glm_dsa_model.hpp"

namespace stormo::glm_dsa {
namespace {

// GlmMoeDsaRMSNorm's default eps, which q_a_layernorm and kv_a_layernorm keep (config.json's
// rms_norm_eps is for the decoder layers' norms only).
constexpr float kInnerNormEps = 1e-6f;

}  // namespace

Expected<void> GlmDsaModel::attention(int layer, const StepContext& ctx, const Rows& normed, KvView kv, Rows out) const {
    STORMO_TRY(toolkit::check_attention_block("glm_dsa", layer, ctx, normed, kv, kv_buffer_count));
    const size_t n = normed.n;
    const std::span<const int64_t> positions = ctx.positions.first(n);
    const MlaWeights& w = layers_.at(static_cast<size_t>(layer)).mla;
    const KernelTable& kt = *compute_.table;
    const size_t heads = static_cast<size_t>(cfg_.n_heads), nope = static_cast<size_t>(cfg_.qk_nope_head_dim);
    const size_t rope = static_cast<size_t>(cfg_.qk_rope_head_dim), qkd = nope + rope;
    const size_t vd = static_cast<size_t>(cfg_.v_head_dim), rank = static_cast<size_t>(cfg_.kv_lora_rank);
    const size_t q_rank = static_cast<size_t>(cfg_.q_lora_rank);
    const bool tracing = ctx.tracer != nullptr && ctx.tracer->wants(layer);

    // Queries: the low-rank path, then RoPE on each head's rope part (after its nope part).
    // q_a and kv_a read the same rows: one call of the pool for both.
    std::vector<float> q_a(n * q_rank), q_resid(n * q_rank), q(n * heads * qkd), compressed(n * (rank + rope));
    const MatmulOut down_projections[] = {{w.q_a, q_a.data()}, {w.kv_a, compressed.data()}};
    matmul_many(compute_, down_projections, normed.data, n);
    for (size_t r = 0; r < n; ++r)
        kt.rmsnorm(q_a.data() + r * q_rank, w.q_a_norm.data(), q_rank, kInnerNormEps, q_resid.data() + r * q_rank);
    matmul(compute_, w.q_b, q_resid.data(), n, q.data());
    rope_.apply(positions, q.data(), heads * qkd, heads, qkd, nope);

    // This block's latents and rope keys, into the cache at their positions.
    std::vector<float> rope_keys(n * rope);
    for (size_t r = 0; r < n; ++r) {
        const float* row = compressed.data() + r * (rank + rope);
        kt.rmsnorm(row, w.kv_a_norm.data(), rank, kInnerNormEps, kv.buffers[kv_latent] + kv.row(kv_latent, positions[r]) * rank);
        std::copy_n(row + rank, rope, rope_keys.data() + r * rope);
    }
    rope_.apply(positions, rope_keys.data(), rope, 1, rope);
    for (size_t r = 0; r < n; ++r)
        std::copy_n(rope_keys.data() + r * rope, rope, kv.buffers[kv_rope_key] + kv.row(kv_rope_key, positions[r]) * rope);

    // Which past positions each row attends to (this also caches the block's indexer keys).
    const std::vector<std::vector<int64_t>> kept = select_positions(layer, positions, q_resid, normed, kv);

    const float scale = static_cast<float>(std::pow(static_cast<double>(qkd), -0.5));
    std::vector<float> context(n * heads * vd);
    attend_absorbed(layer, positions, q, kept, kv, scale, context);
    matmul(compute_, w.o, context.data(), n, out.data);
    if (tracing) {
        // The indexer's choice per row: kept positions ascending, -1 in the slots beyond them.
        const size_t topk = static_cast<size_t>(cfg_.index_topk);
        std::vector<float> chosen(n * topk, -1.0f);
        for (size_t r = 0; r < n; ++r)
            for (size_t j = 0; j < kept[r].size() && j < topk; ++j) chosen[r * topk + j] = static_cast<float>(kept[r][j]);
        ctx.tracer->record("dsa_topk_idx", layer, chosen.data(), n, topk, positions);
        ctx.tracer->record("attn_in", layer, normed.data, n, normed.width, positions);
        ctx.tracer->record("q_rope", layer, q.data(), n, heads * qkd, positions);
        ctx.tracer->record("attn_context", layer, context.data(), n, heads * vd, positions);
        ctx.tracer->record("attn_out", layer, out.data, n, out.width, positions);
        std::vector<float> expanded_context(n * heads * vd), expanded_out(n * out.width);
        attend_expanded(layer, positions, q, kept, kv, scale, expanded_context);
        matmul(compute_, w.o, expanded_context.data(), n, expanded_out.data());
        ctx.tracer->record("attn_out_expanded", layer, expanded_out.data(), n, out.width, positions);
    }
    return {};
}

// Per (row, head): q_lat = W_kb[h]^T q_nope; score_t = (q_lat . latent_t + q_pe . rope_key_t) *
// scale over the kept positions; softmax; pooled = sum_t p_t latent_t; context = W_vb[h] pooled.
void GlmDsaModel::attend_absorbed(int layer, std::span<const int64_t> positions, const std::vector<float>& q,
                                  const std::vector<std::vector<int64_t>>& kept, const KvView& kv, float scale,
                                  std::vector<float>& context) const {
    const AbsorbedKvB& kvb = layers_.at(static_cast<size_t>(layer)).absorbed;
    const KernelTable& kt = *compute_.table;
    const size_t n = positions.size(), heads = static_cast<size_t>(cfg_.n_heads);
    const size_t nope = static_cast<size_t>(cfg_.qk_nope_head_dim), rope = static_cast<size_t>(cfg_.qk_rope_head_dim);
    const size_t qkd = nope + rope, vd = static_cast<size_t>(cfg_.v_head_dim), rank = static_cast<size_t>(cfg_.kv_lora_rank);
    const Compute inline_compute{compute_.table, nullptr, compute_.int8_activations};  // already split by (row, head)
    auto run = [&](size_t begin, size_t end) {
        std::vector<float> q_lat(rank), pooled(rank), scores;
        for (size_t item = begin; item < end; ++item) {
            const size_t r = item / heads, h = item % heads;
            const float* qh = q.data() + (r * heads + h) * qkd;
            matmul(inline_compute, kvb.k_half(h), qh, 1, q_lat.data());
            const std::vector<int64_t>& keys = kept[r];
            scores.resize(keys.size());
            for (size_t j = 0; j < keys.size(); ++j) {
                const float* latent = kv.buffers[kv_latent] + kv.row(kv_latent, keys[j]) * rank;
                const float* rope_key = kv.buffers[kv_rope_key] + kv.row(kv_rope_key, keys[j]) * rope;
                scores[j] = (kt.dot(q_lat.data(), latent, rank) + kt.dot(qh + nope, rope_key, rope)) * scale;
            }
            kt.softmax(scores.data(), scores.size());
            std::fill(pooled.begin(), pooled.end(), 0.0f);
            for (size_t j = 0; j < keys.size(); ++j)
                kt.axpy(scores[j], kv.buffers[kv_latent] + kv.row(kv_latent, keys[j]) * rank, pooled.data(), rank);
            matmul(inline_compute, kvb.v_half(h), pooled.data(), 1, context.data() + (r * heads + h) * vd);
        }
    };
    if (compute_.pool != nullptr) compute_.pool->parallel_for(n * heads, 1, run);
    else run(0, n * heads);
}

// transformers' order: k_nope and v of every position up to the block's last expanded through
// kv_b_proj, k = [k_nope | rope key], softmax(q . k * scale) over the kept positions, sum of v.
void GlmDsaModel::attend_expanded(int layer, std::span<const int64_t> positions, const std::vector<float>& q,
                                  const std::vector<std::vector<int64_t>>& kept, const KvView& kv, float scale,
                                  std::vector<float>& context) const {
    const MlaWeights& w = layers_.at(static_cast<size_t>(layer)).mla;
    const KernelTable& kt = *compute_.table;
    const size_t n = positions.size(), heads = static_cast<size_t>(cfg_.n_heads);
    const size_t nope = static_cast<size_t>(cfg_.qk_nope_head_dim), rope = static_cast<size_t>(cfg_.qk_rope_head_dim);
    const size_t qkd = nope + rope, vd = static_cast<size_t>(cfg_.v_head_dim), rank = static_cast<size_t>(cfg_.kv_lora_rank);
    const size_t span = static_cast<size_t>(positions.back()) + 1;
    std::vector<float> latents(span * rank), expanded(span * heads * (nope + vd));
    for (size_t t = 0; t < span; ++t)
        std::copy_n(kv.buffers[kv_latent] + kv.row(kv_latent, static_cast<int64_t>(t)) * rank, rank, latents.data() + t * rank);
    matmul(compute_, w.kv_b, latents.data(), span, expanded.data());
    std::vector<float> key(qkd), scores;
    for (size_t r = 0; r < n; ++r)
        for (size_t h = 0; h < heads; ++h) {
            const std::vector<int64_t>& keys = kept[r];
            const float* qh = q.data() + (r * heads + h) * qkd;
            scores.resize(keys.size());
            for (size_t j = 0; j < keys.size(); ++j) {
                const size_t t = static_cast<size_t>(keys[j]);
                std::copy_n(expanded.data() + (t * heads + h) * (nope + vd), nope, key.data());
                std::copy_n(kv.buffers[kv_rope_key] + kv.row(kv_rope_key, keys[j]) * rope, rope, key.data() + nope);
                scores[j] = kt.dot(qh, key.data(), qkd) * scale;
            }
            kt.softmax(scores.data(), scores.size());
            float* ctx_h = context.data() + (r * heads + h) * vd;
            std::fill_n(ctx_h, vd, 0.0f);
            for (size_t j = 0; j < keys.size(); ++j)
                kt.axpy(scores[j], expanded.data() + (static_cast<size_t>(keys[j]) * heads + h) * (nope + vd) + nope, ctx_h, vd);
        }
}

}  // namespace stormo::glm_dsa
