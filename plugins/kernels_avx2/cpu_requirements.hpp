#pragma once
// What a kernels plugin needs from the CPU, read from the same comma-separated list its
// description publishes, so the description and the checks cannot disagree. Baseline code.
#include "stormo/cpu_features.hpp"
#include "stormo/error.hpp"
#include "stormo/kernels_plugin.hpp"

namespace stormo::simd {

// stormo_plugin_score for a plugin whose kernels need `features`: 0 when any is missing here.
int score_required_features(const char* features, const ScoreQuery* query);

// True when `cpu` has every feature of the list (false for an unknown name).
bool features_available(const char* features, CpuFeatureSet cpu);

// True when this CPU has every feature; otherwise fills `error` naming the plugin and what lacks.
bool cpu_meets(const char* plugin, const char* features, Error* error);

}  // namespace stormo::simd
