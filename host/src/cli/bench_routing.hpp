#pragma once
// `bench --routing`: the routes the store is measured under, replacing the model's router (a
// random-weight model routes uniformly, so no cache policy can be judged on it). trace:FILE replays a
// recorded route trace mapped onto the model (runtime/trace_routing.hpp); synthetic[:key=value,...]
// generates one with stated locality (tools/synthetic_routes.hpp). The logits then mean nothing.
#include <memory>
#include <optional>
#include <string>

#include "util/json_writer.hpp"
#include "runtime/engine.hpp"
#include "runtime/trace_routing.hpp"
#include "store/cache_simulation.hpp"
#include "tools/synthetic_routes.hpp"

namespace stormo::cli {

struct BenchRouting {
    std::string description;  // what replaced the router, for the output
    std::unique_ptr<TraceRouting> routes;
    std::optional<RouteFigures> figures;  // the generated trace's, next to the published ones
    PredictionAccuracy prediction;  // of the trace's recorded or generated predictions
};

// `rows` bounds the rows the run routes (a synthetic trace is generated that long; a replay cycles).
Expected<BenchRouting> make_bench_routing(const std::string& spec, const Model& model, uint64_t seed, size_t rows);

// The lines bench prints about the override (the table's head).
void print_routing_note(const BenchRouting& routing);
// The JSON keys: "routing" (null: the model's own router), "logits_meaningful", and the override's
// prediction and figures.
void routing_fields(JsonWriter& j, const BenchRouting* routing);

}  // namespace stormo::cli
