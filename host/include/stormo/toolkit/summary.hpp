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
// vocab_size), and the two that depend on the family's layout: its MoE layers and every layer's
// KV buffers in layer order, made by the function its layer plans declare them with, so the
// host's memory plan (sliding-window rings included) is the engine's.
template <class Config>
ModelSummary decoder_summary(const Config& c, std::vector<std::pair<std::string, int64_t>> dimensions,
                             int64_t n_moe_layers, std::vector<KvBufferDecl> kv_buffers) {
    ModelSummary s;
    s.dimensions = std::move(dimensions);
    s.n_layers = static_cast<int>(c.n_layers);
    s.n_moe_layers = static_cast<int>(n_moe_layers);
    s.n_experts = static_cast<int>(c.n_experts);
    s.top_k = static_cast<int>(c.top_k);
    s.hidden_size = static_cast<size_t>(c.hidden_size);
    s.vocab_size = static_cast<size_t>(c.vocab_size);
    for (const KvBufferDecl& b : kv_buffers) s.kv_floats_per_token += b.floats_per_position;
    s.kv_buffers = std::move(kv_buffers);
    return s;
}

// Every layer's KV buffers in layer order, from the family's `layer_kv(config, layer)`: the
// function its layer plans use.
template <class Config, class LayerKv>
std::vector<KvBufferDecl> every_layer_kv(const Config& c, LayerKv&& layer_kv) {
    std::vector<KvBufferDecl> all;
    for (int l = 0; l < static_cast<int>(c.n_layers); ++l)
        for (KvBufferDecl& b : layer_kv(c, l)) all.push_back(std::move(b));
    return all;
}

}  // namespace stormo::toolkit
