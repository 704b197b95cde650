// The MoE routers (see stormo/toolkit/router.hpp).
#include "stormo/toolkit/router.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "stormo/toolkit/swiglu.hpp"

namespace stormo::toolkit {

bool topk_before(const float* v, int32_t a, int32_t b) {
    const bool a_nan = std::isnan(v[a]);
    const bool b_nan = std::isnan(v[b]);
    if (a_nan != b_nan) return a_nan;
    if (!a_nan && v[a] != v[b]) return v[a] > v[b];
    return a < b;
}

std::vector<int32_t> topk_indices(const float* v, size_t n, size_t k) {
    std::vector<int32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    k = std::min(k, n);
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                      [v](int32_t a, int32_t b) { return topk_before(v, a, b); });
    idx.resize(k);
    return idx;
}

void select_topk_then_softmax(const float* logits, size_t n_experts, size_t k, SoftmaxFn softmax, int32_t* ids,
                              float* weights) {
    const std::vector<int32_t> top = topk_indices(logits, n_experts, k);
    for (size_t s = 0; s < k; ++s) {
        ids[s] = top[s];
        weights[s] = logits[top[s]];
    }
    softmax(weights, k);
}

void select_softmax_then_topk(const float* logits, size_t n_experts, size_t k, bool renormalize, SoftmaxFn softmax,
                              int32_t* ids, float* weights) {
    std::vector<float> probs(logits, logits + n_experts);
    softmax(probs.data(), n_experts);
    const std::vector<int32_t> top = topk_indices(probs.data(), n_experts, k);
    float sum = 0.0f;
    for (size_t s = 0; s < k; ++s) {
        ids[s] = top[s];
        weights[s] = probs[static_cast<size_t>(top[s])];
        sum += weights[s];
    }
    if (renormalize)
        for (size_t s = 0; s < k; ++s) weights[s] /= sum;
}

void select_sigmoid_grouped(const float* logits, size_t n_experts, const RouterSpec& spec,
                            const std::vector<float>& correction, int32_t* ids, float* weights) {
    std::vector<float> scores(n_experts), choice(n_experts);
    for (size_t e = 0; e < n_experts; ++e) {
        scores[e] = sigmoid_f32(logits[e]);
        choice[e] = correction.empty() ? scores[e] : scores[e] + correction[e];
    }
    if (spec.n_group > 1) {
        // A group's score is the sum of its two best choice scores; the best topk_group groups stay.
        const size_t per_group = n_experts / spec.n_group;
        std::vector<float> group_scores(spec.n_group);
        for (size_t g = 0; g < spec.n_group; ++g) {
            const auto best = topk_indices(choice.data() + g * per_group, per_group, 2);
            float sum = 0.0f;
            for (int32_t i : best) sum += choice[g * per_group + static_cast<size_t>(i)];
            group_scores[g] = sum;
        }
        const auto kept = topk_indices(group_scores.data(), spec.n_group, spec.topk_group);
        for (size_t g = 0; g < spec.n_group; ++g)
            if (std::find(kept.begin(), kept.end(), static_cast<int32_t>(g)) == kept.end())
                std::fill_n(choice.begin() + static_cast<std::ptrdiff_t>(g * per_group), per_group, 0.0f);
    }
    std::vector<int32_t> top = topk_indices(choice.data(), n_experts, spec.top_k);
    // The chosen set in the order of its weights (the sigmoids), as the reference lists them.
    std::stable_sort(top.begin(), top.end(), [&](int32_t a, int32_t b) { return topk_before(scores.data(), a, b); });
    float sum = 0.0f;
    for (size_t s = 0; s < spec.top_k; ++s) {
        ids[s] = top[s];
        weights[s] = scores[static_cast<size_t>(top[s])];
        sum += weights[s];
    }
    const float denominator = sum + 1e-20f;
    for (size_t s = 0; s < spec.top_k; ++s) {
        if (spec.renormalize) weights[s] /= denominator;
        weights[s] *= spec.scaling;
    }
}

Routing build_router(const Compute& c, int layer, const StepContext& ctx, const RouterWeights& w,
                     const RouterSpec& spec, const Rows& normed) {
    const size_t n = normed.n;
    const size_t n_experts = w.weight.rows;
    const size_t k = spec.top_k;
    std::vector<float> logits(n * n_experts);
    matmul(c, w.weight, normed.data, n, logits.data());
    if (!w.bias.empty())
        for (size_t r = 0; r < n; ++r)
            for (size_t e = 0; e < n_experts; ++e) logits[r * n_experts + e] += w.bias[e];

    Routing routing;
    routing.top_k = k;
    routing.experts.resize(n * k);
    routing.weights.resize(n * k);
    for (size_t r = 0; r < n; ++r) {
        const float* row = logits.data() + r * n_experts;
        int32_t* ids = routing.experts.data() + r * k;
        float* weights = routing.weights.data() + r * k;
        switch (spec.rule) {
            case RouterRule::topk_then_softmax:
                select_topk_then_softmax(row, n_experts, k, c.table->softmax, ids, weights);
                break;
            case RouterRule::softmax_then_topk:
                select_softmax_then_topk(row, n_experts, k, spec.renormalize, c.table->softmax, ids, weights);
                break;
            case RouterRule::sigmoid_grouped:
                select_sigmoid_grouped(row, n_experts, spec, w.correction, ids, weights);
                break;
        }
    }

    if (ctx.tracer != nullptr && ctx.tracer->wants(layer) && ctx.positions.size() >= n) {
        const auto positions = ctx.positions.first(n);
        ctx.tracer->record("router_logits", layer, logits.data(), n, n_experts, positions);
        const std::vector<float> ids(routing.experts.begin(), routing.experts.end());
        ctx.tracer->record("router_topk_idx", layer, ids.data(), n, k, positions);
        ctx.tracer->record("router_topk_weight", layer, routing.weights.data(), n, k, positions);
    }
    return routing;
}

}  // namespace stormo::toolkit
