#pragma once
// Speculation's statistics as JSON (generate --stats, bench --json): drafted, accepted and the
// acceptance, by source, the verify steps and their seconds beside the plain steps', the gate's
// choices, and tokens per GB read (docs/speculation.md).
#include <cstdint>

#include "util/json_writer.hpp"
#include "runtime/engine.hpp"
#include "runtime/speculation.hpp"

namespace stormo::cli {

// The bytes a run's decode steps read: the dense weights once a step, and each expert acquired
// (resident or read) once; `acquired` counts the store's hits and misses.
double gigabytes_read(Engine& engine, uint64_t steps, uint64_t acquired);

// Writes "speculation": {...} into the open object. `tokens`: generated; `gigabytes`: as above.
void write_speculation(JsonWriter& json, const SpeculationStats& stats, SpeculateMode mode, uint64_t tokens, double gigabytes);

}  // namespace stormo::cli
