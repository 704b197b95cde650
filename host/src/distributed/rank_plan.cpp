#include "distributed/rank_plan.hpp"

#include <algorithm>

#include "distributed/expert_split.hpp"

namespace stormo {
namespace {

// The chance that none of k experts drawn without replacement from n falls among `held`:
// C(n - held, k) / C(n, k).
double none_among(int n, int held, int k) {
    double p = 1.0;
    for (int i = 0; i < k; ++i) p *= static_cast<double>(n - held - i) / static_cast<double>(n - i);
    return std::max(0.0, p);
}

}  // namespace

RankPlan plan_ranks(const std::vector<ExpertLayerLayout>& layers, int ranks, int top_k, size_t hidden) {
    RankPlan plan;
    plan.ranks.resize(static_cast<size_t>(ranks));
    const ExpertSplit split = ExpertSplit::even(ranks);
    const double row_bytes = static_cast<double>(hidden * sizeof(float));
    for (const ExpertLayerLayout& layer : layers) {
        const int n = static_cast<int>(layer.locations.size());
        if (n == 0) continue;
        const int k = std::min(top_k, n);
        for (int e = 0; e < n; ++e) {
            RankShare& share = plan.ranks[static_cast<size_t>(split.owner(e, n))];
            ++share.experts;
            for (const auto& part : layer.locations[static_cast<size_t>(e)]) share.bytes += part.nbytes;
        }
        for (int r = 1; r < ranks; ++r) plan.bytes_out_per_token += row_bytes * (1.0 - none_among(n, split.count(r, n), k));
        plan.bytes_back_per_token += row_bytes * k * static_cast<double>(n - split.count(0, n)) / n;
        const int others = n - split.count(0, n);
        plan.max_bytes_out_per_token += static_cast<uint64_t>(row_bytes) * static_cast<uint64_t>(std::min({k, ranks - 1, others}));
        plan.max_bytes_back_per_token += static_cast<uint64_t>(row_bytes) * static_cast<uint64_t>(std::min(k, others));
    }
    return plan;
}

}  // namespace stormo
