#pragma once
// Route traces: what the router chose, layer by layer and step by step, as text. `generate
// --route-trace` writes them, `cache-sim` replays them through the eviction policies and `bench
// --routing trace:FILE` through the real store.
//
// Version 1 (no header): one line per step, "layer e1 e2 ...", the union of experts a layer's block
// chose. Version 2 (after a line "#stormo-route-trace 2"): "layer rows | e1 e2 ... | p1 p2 ...", the
// same union, the rows of the block that chose it (1 for a decode step) and the experts the
// prefetcher predicted for this step from the layer before (nothing after the second bar: no
// prediction was made). A header line may recur (traces appended one after another); each sets the
// version of the lines after it.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stormo/error.hpp"

namespace stormo {

// One acquisition: the union of experts a layer's block chose.
struct RouteStep {
    int layer = 0;
    std::vector<int32_t> experts;
    uint32_t rows = 0;                    // rows of the block; 0: unknown (a version 1 trace)
    std::vector<int32_t> predicted = {};  // the prefetcher's guess for this step; empty: none made
};

// Ids beyond these limits (far above any real model's) are refused when a trace is read, so a
// replay's tables stay small.
inline constexpr int kMaxTraceLayers = 1024;
inline constexpr int kMaxTraceExperts = 16384;
inline constexpr int kRouteTraceVersion = 2;

// Always the current version, its header first.
std::string format_route_trace(std::span<const RouteStep> trace);
// Either version; errors name the source, the line and the value at fault.
Expected<std::vector<RouteStep>> parse_route_trace(const std::string& text, const std::string& source_name);

// The trace's extent: one past its largest layer and expert id (predictions included).
struct TraceShape {
    int layers = 0;
    int experts = 0;
    int64_t pairs() const { return int64_t{layers} * int64_t{experts > 0 ? experts : 1}; }
};
TraceShape shape_of(std::span<const RouteStep> trace);

}  // namespace stormo
