#include "distributed/expert_split.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace stormo {
namespace {

// The real shares before rounding (see weighted_shares).
std::vector<double> real_shares(std::span<const RankCapacity> ranks, int n_experts) {
    const size_t R = ranks.size();
    const double n = n_experts;
    std::vector<double> c(R), share(R, 0.0);
    for (size_t r = 0; r < R; ++r) c[r] = std::max(0.0, ranks[r].experts);
    const double held = std::accumulate(c.begin(), c.end(), 0.0);
    if (held >= n) {
        // Water-filling: the level t at which sum min(c_r, t) == n, raised through the capacities
        // in increasing order.
        std::vector<double> sorted = c;
        std::sort(sorted.begin(), sorted.end());
        double below = 0.0;  // the capacities under the level, summed
        double level = 0.0;
        for (size_t i = 0; i < R; ++i) {
            const double above = static_cast<double>(R - i);
            level = (n - below) / above;
            if (level <= sorted[i]) break;
            below += sorted[i];
        }
        for (size_t r = 0; r < R; ++r) share[r] = std::min(c[r], level);
        return share;
    }
    double bandwidth = 0.0;
    for (const RankCapacity& rank : ranks) bandwidth += std::max(0.0, rank.disk_bytes_per_s);
    if (bandwidth > 0.0) {
        const double lambda = (n - held) / bandwidth;
        for (size_t r = 0; r < R; ++r) share[r] = c[r] + lambda * std::max(0.0, ranks[r].disk_bytes_per_s);
        return share;
    }
    // No rank measured a disk (none could stream): by memory, or evenly when no rank has any.
    for (size_t r = 0; r < R; ++r) share[r] = held > 0.0 ? n * c[r] / held : n / static_cast<double>(R);
    return share;
}

}  // namespace

std::vector<int> weighted_shares(std::span<const RankCapacity> ranks, int n_experts) {
    const size_t R = ranks.size();
    if (R == 0) return {};
    const std::vector<double> share = real_shares(ranks, n_experts);
    std::vector<int> count(R);
    std::vector<double> remainder(R);
    int given = 0;
    for (size_t r = 0; r < R; ++r) {
        const double whole = std::floor(share[r]);
        count[r] = static_cast<int>(whole);
        remainder[r] = share[r] - whole;
        given += count[r];
    }
    // The experts the floors leave go to the largest remainders, the lower rank on a tie (the real
    // shares sum to n, so fewer than R are left).
    std::vector<size_t> order(R);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
    for (size_t i = 0; given < n_experts; i = (i + 1) % R, ++given) ++count[order[i]];
    // A rank with a positive share holds at least one expert (when there are enough): it takes
    // one from the largest share, the lower rank on a tie.
    for (size_t r = 0; r < R; ++r) {
        if (count[r] > 0 || share[r] <= 0.0) continue;
        const auto largest = std::max_element(count.begin(), count.end());
        if (*largest <= 1) break;
        --*largest;
        ++count[r];
    }
    return count;
}

ExpertSplit ExpertSplit::even(int ranks) {
    ExpertSplit split;
    split.ranks_ = std::max(1, ranks);
    return split;
}

ExpertSplit ExpertSplit::weighted(std::vector<RankCapacity> ranks, std::span<const int> layer_sizes) {
    ExpertSplit split;
    split.ranks_ = std::max<int>(1, static_cast<int>(ranks.size()));
    split.weights_ = std::move(ranks);
    for (int n : layer_sizes)
        if (n > 0 && !split.weighted_firsts_.count(n)) split.weighted_firsts_[n] = split.firsts(n);
    return split;
}

std::vector<int> ExpertSplit::firsts(int n_experts) const {
    const std::vector<int> count = weighted_shares(weights_, n_experts);
    std::vector<int> first(count.size() + 1, 0);
    std::partial_sum(count.begin(), count.end(), first.begin() + 1);
    return first;
}

int ExpertSplit::first(int rank, int n_experts) const {
    if (weights_.empty()) return static_cast<int>(static_cast<int64_t>(rank) * n_experts / ranks_);
    if (const auto known = weighted_firsts_.find(n_experts); known != weighted_firsts_.end())
        return known->second[static_cast<size_t>(rank)];
    return firsts(n_experts)[static_cast<size_t>(rank)];
}

int ExpertSplit::owner(int expert, int n_experts) const {
    // Even: the largest r with first(r) <= e, i.e. r * n / R <= e  <=>  r * n < (e + 1) * R.
    if (weights_.empty()) return static_cast<int>((static_cast<int64_t>(expert + 1) * ranks_ - 1) / n_experts);
    const auto known = weighted_firsts_.find(n_experts);
    const std::vector<int> computed = known == weighted_firsts_.end() ? firsts(n_experts) : std::vector<int>{};
    const std::vector<int>& first = known == weighted_firsts_.end() ? computed : known->second;
    // The last rank whose range starts at or before the expert and is not empty.
    const auto after = std::upper_bound(first.begin(), first.end(), expert);
    return static_cast<int>(after - first.begin()) - 1;
}

}  // namespace stormo
