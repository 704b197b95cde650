#pragma once
// The split of a layer's routed experts over the ranks of a distributed run (docs/distributed.md,
// "The split"): rank r holds a contiguous range of every MoE layer's experts, ranges in rank
// order. Even by default: rank r of R holds [r * n / R, (r + 1) * n / R) (integer division), so
// shares differ by one expert at most. Weighted (--rank-split weighted): the shares follow what
// each rank measured at start, its memory for experts and its disk's read bandwidth, by the rule
// of weighted_shares. Either way every rank computes the same owners from the same inputs,
// without asking anyone.
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace stormo {

// What a rank can give a layer's experts: `experts`, its memory for experts over the bytes of one
// expert summed over the MoE layers (c_r, fractional); and its disk's read bandwidth (0 when it
// holds every expert in RAM and was not measured).
struct RankCapacity {
    double experts = 0.0;
    double disk_bytes_per_s = 0.0;
};

// The rule, pure: the experts of a layer of n each rank holds (sum n, each >= 0).
// If the ranks' memory holds every expert (sum c_r >= n), compute stays balanced: n_r = min(c_r, t)
// with t such that the shares sum to n (water-filling: equal shares when every rank can hold an
// even one). Otherwise every share streams in part: n_r = c_r + lambda * BW_r with
// lambda = (n - sum c_r) / sum BW_r, which gives every rank the same disk time per token. The real
// shares are rounded by largest remainder (ties to the lower rank); a rank with a positive share
// then holds at least one expert when there are enough, taken from the largest share.
std::vector<int> weighted_shares(std::span<const RankCapacity> ranks, int n_experts);

class ExpertSplit {
public:
    ExpertSplit() = default;  // one rank holding everything
    static ExpertSplit even(int ranks);
    // The weighted rule over the ranks' capacities, for layers of each of `layer_sizes` experts
    // (other sizes are computed when asked).
    static ExpertSplit weighted(std::vector<RankCapacity> ranks, std::span<const int> layer_sizes);

    int ranks() const { return ranks_; }
    // The first expert rank `rank` holds (== n_experts for rank == ranks()).
    int first(int rank, int n_experts) const;
    int count(int rank, int n_experts) const { return first(rank + 1, n_experts) - first(rank, n_experts); }
    int owner(int expert, int n_experts) const;

private:
    std::vector<int> firsts(int n_experts) const;  // [ranks + 1] for a weighted split

    int ranks_ = 1;
    std::vector<RankCapacity> weights_;              // empty: the even split
    std::map<int, std::vector<int>> weighted_firsts_;  // n_experts -> firsts
};

}  // namespace stormo
