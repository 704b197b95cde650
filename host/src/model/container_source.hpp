#pragma once
// A directory `stormo convert` wrote (docs/convert.md) as a ModelSource: its manifest checked
// against the data file before anything is read (a missing or short data file, a manifest of a
// newer format version: refused naming the file and the tensor at fault), config.json and
// generation_config.json as the source had them, and a GGUF source's metadata (the tokenizer and
// the chat template) from the GGUF file without tensors beside them.
#include <memory>
#include <string>

#include "model/container_manifest.hpp"
#include "model/model_source.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

STORMO_API Expected<std::unique_ptr<ModelSource>> open_container_source(const std::string& dir);

}  // namespace stormo
