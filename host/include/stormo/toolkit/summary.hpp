#pragma once
// A family's summary for `inspect` and the bench, made from its parsed config: config.json is read
// and checked once, by the parser the load uses, and the summary only describes the result.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/family.hpp"

namespace stormo::toolkit {

// The counts the host plans with.
struct SummaryCounts {
    int64_t n_layers = 0;
    int64_t n_moe_layers = 0;
    int64_t n_experts = 0;          // routed experts per MoE layer
    int64_t top_k = 0;
    int64_t hidden_size = 0;
    int64_t vocab_size = 0;
    int64_t kv_floats_per_token = 0;  // over all layers
};

// `dimensions`: named as config.json names them, in print order.
ModelSummary make_summary(std::vector<std::pair<std::string, int64_t>> dimensions, const SummaryCounts& counts);

// parse(config), then describe(parsed): a family's summarize() in one line.
template <class Parse, class Describe>
Expected<ModelSummary> summarize_parsed(const ModelConfig& config, Parse parse, Describe describe) {
    auto parsed = parse(config);
    if (!parsed) return tl::unexpected(parsed.error());
    return describe(*parsed);
}

}  // namespace stormo::toolkit
