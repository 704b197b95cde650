#pragma once
// Route traces with stated skew and temporal reuse, for measuring the expert store where the
// model's own router cannot show locality (random weights route uniformly). `cache-sim --synthetic`
// replays them through the policies and `bench --routing synthetic:...` through the real store:
// one generator, so both see the same routes for the same parameters.
//
// Per layer, experts are ranked by a Zipf law of exponent `zipf` (a random ranking per layer), and a
// working set of `working_set` x k experts drawn by that law is what the layer's tokens currently use.
// A token's k experts are drawn without repetition, each either repeating one the previous token
// chose in this layer (probability `reuse`) or drawn uniformly from the working set. After each
// token a share `turnover` of the working set on average is replaced by new draws, so the set
// wanders as a context's topic does: a window of tokens is concentrated, the whole trace much less. Each step also carries a
// prediction (the prefetcher's guess), naming each chosen expert with probability
// `prediction_recall` and filled to k with other experts.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stormo/error.hpp"
#include "store/route_trace.hpp"

namespace stormo {

struct SyntheticRouting {
    int layers = 48;
    int experts = 128;
    int top_k = 8;
    size_t tokens = 1024;
    uint64_t seed = 1;
    double zipf = 0.4;
    double reuse = 0.1;
    double working_set = 3.4;  // x top_k
    double turnover = 0.06;    // share of the working set replaced per token
    double prediction_recall = 0.89;
};

// The calibrated preset ("published"): zipf, reuse and drift chosen so the generated trace's
// figures come near the published ones (docs/expert_store.md, "Routing with locality").
SyntheticRouting published_routing_preset();

// Parses "synthetic[:key=value,...]" or its tail: keys layers, experts, top-k, tokens, seed, zipf,
// reuse, drift, recall, preset (=published, the default, applied first). `base` gives the shape
// when the text does not (bench passes the model's).
Expected<SyntheticRouting> parse_synthetic_routing(std::string_view spec, const SyntheticRouting& base);
std::string describe(const SyntheticRouting& r);

// Token by token, each token's layers in order, each step one row. With `next_draw`, also per step
// the chance that one draw of its layer's next step picks each expert, from the generator's hidden
// state after the step (the working set, the experts just chosen): what cache-sim's informed
// policy ranks by, to estimate how close any online policy can come to Belady's optimum.
Expected<std::vector<RouteStep>> generate_routes(const SyntheticRouting& r,
                                                 std::vector<std::vector<float>>* next_draw = nullptr);

// The figures the published ones are stated in, measured on one-row steps of a trace.
struct RouteFigures {
    double consecutive_share = 0.0;  // experts a token shares with the previous token in the same layer, / k
    double top_half_share = 0.0;     // selections taken by the more chosen half of a layer's experts
    double gini = 0.0;               // Gini coefficient of a layer's selection counts
    double hot_list_share = 0.0;     // the 1/16 most chosen of the first half's experts, in the second half
    double lru_hit_rate = 0.0;       // a per-layer LRU of a quarter of the layer's experts
};
// Per layer, averaged over layers; top_half_share and gini over windows of `window` tokens
// (averaged), the others over the whole trace.
RouteFigures measure_routes(std::span<const RouteStep> trace, int experts, size_t window);
inline constexpr size_t kFigureWindow = 256;

// The published figures the preset aims at, with the name of each (the tables print both).
struct PublishedFigure {
    const char* name;
    double low;
    double high;
};
std::vector<PublishedFigure> published_figures();
std::vector<double> figure_values(const RouteFigures& f);
// One line per figure, "<indent><name> <measured>  published <target>", for the tables.
std::string figures_table(const RouteFigures& f, std::string_view indent);

}  // namespace stormo
