#include "store/read_ahead.hpp"

#include <algorithm>

namespace stormo {

size_t read_ahead_experts(ExpertStore& store, std::span<const std::vector<int32_t>> experts_by_layer) {
    size_t room = store.streams() ? store.stats().slots : 0;
    size_t asked = 0;
    for (size_t layer = 0; layer < experts_by_layer.size() && room > 0; ++layer) {
        const std::vector<int32_t>& experts = experts_by_layer[layer];
        if (experts.empty()) continue;
        const size_t n = std::min({experts.size(), room, store.max_batch()});
        store.prefetch(static_cast<int>(layer), std::span<const int32_t>(experts).first(n), n);
        room -= n;
        asked += n;
    }
    return asked;
}

}  // namespace stormo
