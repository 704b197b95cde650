// ModelSource's out-of-line destructor: the key function that anchors its vtable and RTTI in the
// core library, so plugins and the CLI share one definition; and the choice between a model
// directory and a GGUF file.
#include "model/model_source.hpp"

#include "model/gguf_source.hpp"

namespace stormo {

ModelSource::~ModelSource() = default;

// By the name's ending, as llama.cpp users name their files: a directory named "x.gguf" would
// be refused by the GGUF reader as not a regular file, which says what is wrong.
Expected<std::unique_ptr<ModelSource>> open_model_source(const std::string& path, std::span<const Family* const> families) {
    if (path.ends_with(".gguf")) return open_gguf_source(path, families);
    return open_model_directory(path);
}

}  // namespace stormo
