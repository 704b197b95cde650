#pragma once
// Reading ahead the experts a restored sequence's last tokens chose (a session file's, a prompt
// cache hit's, Session::routed_experts): the first steps after a restore likely choose them again,
// and a store that starts cold would otherwise miss on every one of them.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "store/expert_store.hpp"

namespace stormo {

// Asks `store` to read experts_by_layer[l] of each layer l, layer by layer from the first (the
// first to run), and no more than the store's slots in all, so that the later layers' reads do not
// evict the earlier ones'. Returns how many were asked for (0 where every expert is resident).
size_t read_ahead_experts(ExpertStore& store, std::span<const std::vector<int32_t>> experts_by_layer);

}  // namespace stormo
