#pragma once
// The toy family's forward pass: a dense pre-norm decoder (GQA attention without RoPE, a SwiGLU
// MLP in every layer, the embedding tied to the head), put together from the family toolkit.
#include <memory>

#include "stormo/family.hpp"

namespace toy {

stormo::Expected<std::unique_ptr<stormo::Model>> load_toy_model(stormo::LoadContext& ctx);

}  // namespace toy
