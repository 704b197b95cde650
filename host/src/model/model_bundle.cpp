// ModelBundle: see model_bundle.hpp.
#include "model/model_bundle.hpp"

#include "model/model_text_files.hpp"

namespace stormo {

Expected<ModelBundle> ModelBundle::open(const std::string& path, std::span<const Family* const> families) {
    STORMO_TRY_ASSIGN(const ModelPath recognised, recognise_model_path(path));
    ModelBundle bundle;
    bundle.path_ = path;
    bundle.opened_ = recognised.path;
    STORMO_TRY_ASSIGN(auto source, open_model_source(recognised, families));
    bundle.source_ = std::move(source);
    return bundle;
}

text::ModelText ModelBundle::text() const {
    if (const GgufHeader* header = source_->gguf_metadata()) {
        text::ModelText out;
        out.path = opened_;
        out.gguf = header;
        out.keeps_gguf = source_;
        return out;
    }
    return read_tokenizer_files(opened_);
}

}  // namespace stormo
