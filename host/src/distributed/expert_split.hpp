#pragma once
// The split of a layer's routed experts over the ranks of a distributed run (docs/distributed.md):
// rank r holds the contiguous experts [r * n / R, (r + 1) * n / R) of every MoE layer of n
// experts, R ranks (integer division). Shares differ by one expert at most, and every rank
// computes the same owners from the same two numbers without asking anyone.
namespace stormo {

struct ExpertSplit {
    int ranks = 1;

    // The first expert rank `rank` holds (== n_experts for rank == ranks).
    int first(int rank, int n_experts) const;
    int count(int rank, int n_experts) const { return first(rank + 1, n_experts) - first(rank, n_experts); }
    int owner(int expert, int n_experts) const;
};

}  // namespace stormo
