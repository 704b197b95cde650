#pragma once
// A family's summary for `inspect` and the bench, made from its parsed config: config.json is read
// and checked once, by the parser the load uses, and the summary only describes the result.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "stormo/family.hpp"

namespace stormo::toolkit {

// `dimensions` named as config.json names them, in print order; the counts the host plans with
// from the fields every toolkit family's config has (n_layers, n_experts, top_k, hidden_size,
// vocab_size), and the two that depend on the family's layout.
template <class Config>
ModelSummary decoder_summary(const Config& c, std::vector<std::pair<std::string, int64_t>> dimensions,
                             int64_t n_moe_layers, int64_t kv_floats_per_token) {
    ModelSummary s;
    s.dimensions = std::move(dimensions);
    s.n_layers = static_cast<int>(c.n_layers);
    s.n_moe_layers = static_cast<int>(n_moe_layers);
    s.n_experts = static_cast<int>(c.n_experts);
    s.top_k = static_cast<int>(c.top_k);
    s.hidden_size = static_cast<size_t>(c.hidden_size);
    s.vocab_size = static_cast<size_t>(c.vocab_size);
    s.kv_floats_per_token = static_cast<size_t>(kv_floats_per_token);
    return s;
}

}  // namespace stormo::toolkit
