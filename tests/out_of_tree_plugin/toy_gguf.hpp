#pragma once
// The toy family's GGUF architecture, "toy": llama.cpp-style names and keys onto the toy's
// config.json and checkpoint tensors, with the family toolkit's GGUF helpers.
#include "stormo/error.hpp"
#include "stormo/gguf_view.hpp"

namespace toy {

inline constexpr const char* kGgufArchitecture = "toy";

stormo::Expected<stormo::GgufMappedModel> map_toy_gguf(const stormo::GgufView& file);

}  // namespace toy
