#include "distributed/expert_split.hpp"

#include <cstdint>

namespace stormo {

int ExpertSplit::first(int rank, int n_experts) const {
    return static_cast<int>(static_cast<int64_t>(rank) * n_experts / ranks);
}

// The largest r with first(r) <= e: r * n / R <= e  <=>  r * n < (e + 1) * R.
int ExpertSplit::owner(int expert, int n_experts) const {
    return static_cast<int>((static_cast<int64_t>(expert + 1) * ranks - 1) / n_experts);
}

}  // namespace stormo
