#pragma once
// A GGUF model (one file or a split, model/gguf_split.hpp) as a ModelSource: the configuration the
// families read comes from general.architecture and the "<arch>.*" keys, and the tensors carry the
// checkpoint names and layouts the family reads (transformers' names), built from llama.cpp's
// (blk.N.ffn_gate_exps.weight, attn_q, token_embd, output, ...).
//
// A tensor whose layout in the file is the family's (every plain matrix, and each expert's slice
// of a stacked expert tensor) is handed over as the file's bytes in the file's type: F32, F16,
// BF16, or a block type the kernels run in place (stormo/gguf_types.hpp, gguf_dtype), so the
// experts stream from the file through the expert store. A tensor llama.cpp's converter reordered
// (GLM's split kv_b), a type without kernels, and a one-dimensional non-F32 tensor are
// dequantized to float32 when the model opens and held in RAM (in_memory()).
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
