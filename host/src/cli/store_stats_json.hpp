#pragma once
// The expert store's counters as the --stats files of generate and pipe write them.
#include "store/expert_store.hpp"
#include "util/json_writer.hpp"

namespace stormo::cli {

// Adds expert_hits, expert_misses, expert_bytes_read, read_wait_seconds, prefetch_issued,
// prefetch_used, prefetch_wasted, evictions, on_probation, expert_slots, expert_slot_bytes and
// direct_io to the object `json` is writing.
JsonWriter& store_stats_fields(JsonWriter& json, const ExpertStoreStats& store);

}  // namespace stormo::cli
