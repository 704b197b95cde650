#pragma once
// A GGUF model (one file or a split, model/gguf_split.hpp) as a ModelSource. The host reads the
// container; the loaded family that claims its general.architecture maps the metadata and the
// tensor table (Family::map_gguf, stormo/gguf_view.hpp) onto the configuration it reads and the
// checkpoint names and layouts of its tensors (transformers' names, built from llama.cpp's
// blk.N.ffn_gate_exps.weight, attn_q, token_embd, output, ...).
//
// A tensor whose layout in the file is the family's (every plain matrix, and each expert's slice
// of a stacked expert tensor) is handed over as the file's bytes in the file's type: F32, F16,
// BF16, or a block type the kernels run in place (stormo/gguf_types.hpp, gguf_dtype), so the
// experts stream from the file through the expert store. A tensor the family's mapping computed
// (one llama.cpp's converter reordered, a type without kernels, a one-dimensional non-F32 tensor)
// is float32 values made when the model opens and held in RAM (in_memory()).
#include <memory>
#include <span>
#include <string>

#include "model/model_source.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

class Family;

// Opens `path` (a .gguf file, or any part of a split model) for the first of `families` that
// claims its general.architecture; an architecture none claims is refused naming it and the ones
// they claim.
STORMO_API Expected<std::unique_ptr<ModelSource>> open_gguf_source(const std::string& path,
                                                                  std::span<const Family* const> families);

}  // namespace stormo
