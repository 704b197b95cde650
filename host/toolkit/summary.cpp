// A family's summary from its parsed config (summary.hpp).
#include "stormo/toolkit/summary.hpp"

namespace stormo::toolkit {

ModelSummary make_summary(std::vector<std::pair<std::string, int64_t>> dimensions, const SummaryCounts& c) {
    ModelSummary s;
    s.dimensions = std::move(dimensions);
    s.n_layers = static_cast<int>(c.n_layers);
    s.n_moe_layers = static_cast<int>(c.n_moe_layers);
    s.n_experts = static_cast<int>(c.n_experts);
    s.top_k = static_cast<int>(c.top_k);
    s.hidden_size = static_cast<size_t>(c.hidden_size);
    s.vocab_size = static_cast<size_t>(c.vocab_size);
    s.kv_floats_per_token = static_cast<size_t>(c.kv_floats_per_token);
    return s;
}

}  // namespace stormo::toolkit
