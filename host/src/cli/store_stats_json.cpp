#include "cli/store_stats_json.hpp"

namespace stormo::cli {

JsonWriter& store_stats_fields(JsonWriter& json, const ExpertStoreStats& store) {
    return json.field("expert_hits", store.hits)
        .field("expert_misses", store.misses)
        .field("expert_bytes_read", store.bytes_read)
        .field("read_wait_seconds", store.read_wait_seconds)
        .field("prefetch_issued", store.prefetch_issued)
        .field("prefetch_used", store.prefetch_used)
        .field("prefetch_wasted", store.prefetch_wasted)
        .field("evictions", store.evictions)
        .field("on_probation", store.on_probation)
        .field("expert_slots", store.slots)
        .field("expert_slot_bytes", store.slot_bytes)
        .field("direct_io", store.direct_io);
}

}  // namespace stormo::cli
