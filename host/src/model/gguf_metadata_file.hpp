#pragma once
// A GGUF file that holds a model's metadata and no tensor: how a container converted from a GGUF
// model keeps what the tokenizer and the chat template are built from (tokenizer.ggml.*,
// tokenizer.chat_template, general.*), so they are built from it exactly as from the source.
#include <string>

#include "model/gguf.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

// The bytes of a GGUF v3 file with every key of `header` but the split.* keys (the file is one
// whole part) and no tensors.
STORMO_API std::string gguf_metadata_file(const GgufHeader& header);

}  // namespace stormo
