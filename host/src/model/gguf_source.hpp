#pragma once
// A GGUF model (one file or a split, model/gguf_split.hpp) as a ModelSource: the configuration the
// families read comes from general.architecture and the "<arch>.*" keys, and the tensors carry the
// checkpoint names and layouts the family reads (transformers' names), built from llama.cpp's
// (blk.N.ffn_gate_exps.weight, attn_q, token_embd, output, ...).
//
// First step, on the float road: every tensor is dequantized to float32 when the model opens
// (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, MXFP4: stormo/gguf_types.hpp) and held in RAM,
// reordered where llama.cpp's converter reordered it (the gate and up experts it split, the
// matrices it transposed). The source therefore needs four bytes of RAM per parameter and its
// experts are always resident (tensors_in_memory()); running GGUF blocks in place through the
// kernels and streaming GGUF experts from the file are later steps (docs/gguf.md).
#include <memory>
#include <string>

#include "model/model_source.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

// Opens `path` (a .gguf file, or any part of a split model) for the family of its
// general.architecture; an architecture without a mapping here is refused by name.
STORMO_API Expected<std::unique_ptr<ModelSource>> open_gguf_source(const std::string& path);

}  // namespace stormo
