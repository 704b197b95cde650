// ModelSource's out-of-line destructor: the key function that anchors its vtable and RTTI in the
// core library, so plugins and the CLI share one definition; and the choice between a model
// directory and a GGUF file, by what the path holds.
#include "model/model_source.hpp"

#include "model/container_source.hpp"
#include "model/gguf_source.hpp"

namespace stormo {

ModelSource::~ModelSource() = default;

// By the path's content, not its name (model_path.hpp).
Expected<std::unique_ptr<ModelSource>> open_model_source(const std::string& path, std::span<const Family* const> families) {
    STORMO_TRY_ASSIGN(const ModelPath recognised, recognise_model_path(path));
    return open_model_source(recognised, families);
}

Expected<std::unique_ptr<ModelSource>> open_model_source(const ModelPath& recognised, std::span<const Family* const> families) {
    if (recognised.kind == ModelPathKind::gguf) return open_gguf_source(recognised.path, families);
    if (recognised.kind == ModelPathKind::container) return open_container_source(recognised.path);
    return open_model_directory(recognised.path);
}

}  // namespace stormo
