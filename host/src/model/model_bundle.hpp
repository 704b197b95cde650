#pragma once
// A model path opened once: the ModelSource the engine runs, and what the tokenizer and the chat
// template are made from, taken from that same opened model. A GGUF model (a split's parts too)
// is parsed once per command; its tokenizer and template come from the header the weights were
// mapped from.
#include <memory>
#include <span>
#include <string>

#include "model/model_source.hpp"
#include "model/model_text.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

class STORMO_API ModelBundle {
public:
    // `path` as --model takes it (model/model_path.hpp): recognised by content, then opened; a GGUF
    // model is mapped by the one of `families` that claims its architecture.
    static Expected<ModelBundle> open(const std::string& path, std::span<const Family* const> families);

    const std::string& path() const { return path_; }  // as given
    const std::shared_ptr<ModelSource>& source() const { return source_; }
    // The tokenizer's and the template's inputs: a GGUF model's metadata, or the model
    // directory's tokenizer.json, tokenizer_config.json and chat_template.jinja, read now.
    text::ModelText text() const;

private:
    std::string path_;
    std::string opened_;  // the directory or GGUF file recognised from path_
    std::shared_ptr<ModelSource> source_;
};

}  // namespace stormo
