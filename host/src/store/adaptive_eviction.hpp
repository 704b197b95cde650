#pragma once
// The adaptive eviction policy: hotness at a slow decay, which keeps the experts a layer chooses
// over many tokens (the trained demos' routes favour it), and at a fast one, which follows a
// working set that wanders with the context (the calibrated synthetic routes favour it, by 10 to
// 25 points of Belady's hit rate at 20-50% of the experts: docs/expert_store.md). Each is
// replayed in a shadow of the store's slots (SlotModel, names only); the store ranks and places
// by whichever of them hit more over the last few tokens.
#include <cstddef>
#include <memory>

#include "store/eviction.hpp"

namespace stormo {

// Candidates: hotness at settings.decay and at settings.recency_decay, both with settings.margin;
// `slots` as many as the store has (the shadows replay its pool).
std::unique_ptr<Eviction> make_adaptive_eviction(const EvictionSettings& settings, size_t slots, int n_layers, int n_experts);

}  // namespace stormo
