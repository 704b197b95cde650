// The DSA lightning indexer: per query, a score for every past position, and the top index_topk
// kept (all of them while the context is shorter). As transformers computes it:
//   key    k_t = RoPE(LayerNorm(wk x_t)) on its first qk_rope_head_dim values (rope part first)
//   query  q_h = RoPE(wq_b q_resid) per head, rope part first
//   weight w_h = weights_proj(x) * index_n_heads^-0.5
//   score  s_t = sum_h w_h * (q_h . k_t) * index_head_dim^-0.5
// Keys are cached per position (KV buffer index_key). Ties keep the lower position.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "glm_dsa_model.hpp"
#include "stormo/toolkit/router.hpp"

namespace stormo::glm_dsa {
namespace {

constexpr float kKeyNormEps = 1e-6f;  // the indexer's nn.LayerNorm(head_dim, eps=1e-6)

// torch.nn.LayerNorm over one vector: (x - mean) / sqrt(var + eps) * w + b, biased variance.
void layer_norm(const float* x, size_t n, const std::vector<float>& w, const std::vector<float>& b, float* out) {
    float mean = 0.0f;
    for (size_t i = 0; i < n; ++i) mean += x[i];
    mean /= static_cast<float>(n);
    float var = 0.0f;
    for (size_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
    var /= static_cast<float>(n);
    const float inv = 1.0f / std::sqrt(var + kKeyNormEps);
    for (size_t i = 0; i < n; ++i) out[i] = (x[i] - mean) * inv * w[i] + b[i];
}

}  // namespace

toolkit::KeptPositions GlmDsaModel::select_positions(const toolkit::MlaSelectionInput& in) const {
    const std::span<const int64_t> positions = in.positions;
    const Rows& normed = in.normed;
    const KvView& kv = in.kv;
    const IndexerWeights& w = layers_.at(static_cast<size_t>(in.layer)).indexer;
    const KernelTable& kt = *compute_.table;
    const size_t n = positions.size(), heads = static_cast<size_t>(cfg_.index_n_heads);
    const size_t dim = static_cast<size_t>(cfg_.index_head_dim);

    // This block's keys, into the cache.
    std::vector<float> k(n * dim);
    matmul(compute_, w.wk, normed.data, n, k.data());
    for (size_t r = 0; r < n; ++r) layer_norm(k.data() + r * dim, dim, w.k_norm_weight, w.k_norm_bias, k.data() + r * dim);
    rope_.apply(positions, k.data(), dim, 1, dim);
    for (size_t r = 0; r < n; ++r) std::copy_n(k.data() + r * dim, dim, kv.at(kv_index_key, positions[r]));

    std::vector<float> q(n * heads * dim), weights(n * heads);
    matmul(compute_, w.wq_b, in.q_latent.data(), n, q.data());
    rope_.apply(positions, q.data(), heads * dim, heads, dim);
    matmul(compute_, w.weights_proj, normed.data, n, weights.data());
    const float head_scale = static_cast<float>(std::pow(static_cast<double>(heads), -0.5));
    const float score_scale = static_cast<float>(std::pow(static_cast<double>(dim), -0.5));
    for (float& x : weights) x *= head_scale;

    const size_t topk = static_cast<size_t>(cfg_.index_topk);
    toolkit::KeptPositions kept(n);
    // Every head's dots over each run of cached keys come from one dot_many call (the bits of
    // dot per pair, each key read once for all heads); then each position's score sums its heads
    // in head order, as a dot per head and position did.
    const size_t key_stride = kv.buffers[kv_index_key].width;
    auto run = [&](size_t begin, size_t end) {
        std::vector<float> scores, dots;
        for (size_t r = begin; r < end; ++r) {
            const size_t count = static_cast<size_t>(positions[r]) + 1;
            if (count <= topk) {  // a context shorter than index_topk keeps everything
                kept[r].resize(count);
                std::iota(kept[r].begin(), kept[r].end(), int64_t{0});
                continue;
            }
            dots.resize(heads * count);
            for (size_t t = 0; t < count;) {
                const size_t length = std::min(count - t, kv.run(kv_index_key, static_cast<int64_t>(t)));
                kt.dot_many(q.data() + r * heads * dim, heads, dim, kv.at(kv_index_key, static_cast<int64_t>(t)), length,
                            key_stride, dim, dots.data() + t, count);
                t += length;
            }
            scores.assign(count, 0.0f);
            for (size_t t = 0; t < count; ++t) {
                float s = 0.0f;
                for (size_t h = 0; h < heads; ++h) s += dots[h * count + t] * score_scale * weights[r * heads + h];
                scores[t] = s;
            }
            const std::vector<int32_t> top = toolkit::topk_indices(scores.data(), count, topk);
            kept[r].assign(top.begin(), top.end());
            std::sort(kept[r].begin(), kept[r].end());
        }
    };
    if (compute_.pool != nullptr) compute_.pool->parallel_for(n, 1, run);
    else run(0, n);
    return kept;
}

}  // namespace stormo::glm_dsa
