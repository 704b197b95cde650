// GPT-OSS router: logits = W x + b over all experts; the top-k logits in torch.topk's order
// (descending, ties to the lower index); the weights are a softmax over those k logits only.
#include "gpt_oss_model.hpp"
#include "moe_math.hpp"

namespace stormo::gpt_oss {

Routing GptOssModel::route(int layer, const StepContext& ctx, const Rows& normed) const {
    const LayerWeights& w = layers_.at(static_cast<size_t>(layer));
    const size_t n = normed.n;
    const size_t n_experts = static_cast<size_t>(cfg_.n_experts);
    const size_t k = static_cast<size_t>(cfg_.top_k);

    std::vector<float> logits(n * n_experts);
    matmul(compute_, w.router, normed.data, n, logits.data());
    for (size_t r = 0; r < n; ++r)
        for (size_t e = 0; e < n_experts; ++e) logits[r * n_experts + e] += w.router_bias[e];

    Routing routing;
    routing.top_k = k;
    routing.experts.resize(n * k);
    routing.weights.resize(n * k);
    for (size_t r = 0; r < n; ++r) {
        const float* row = logits.data() + r * n_experts;
        const std::vector<int32_t> top = topk_indices(row, n_experts, k);
        float* weights = routing.weights.data() + r * k;
        for (size_t s = 0; s < k; ++s) {
            routing.experts[r * k + s] = top[s];
            weights[s] = row[top[s]];
        }
        compute_.table->softmax(weights, k);
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

}  // namespace stormo::gpt_oss
