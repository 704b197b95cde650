#pragma once
// Reading what a model's tokenizer and chat template are made from (model/model_text.hpp), so that
// text/ opens no file: for a model the bundle opened (model_bundle.hpp), and for a path that need
// not be a whole model.
#include <string>

#include "model/model_text.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

// A directory's tokenizer.json, tokenizer_config.json and chat_template.jinja; or, for a file,
// that file as the tokenizer.json. Each read with a size cap; a file that cannot be read is kept
// as its error, for whichever of the tokenizer and the template needs it.
STORMO_API text::ModelText read_tokenizer_files(const std::string& path);

// From a path as `tokenize --tokenizer` and `chat-template --tokenizer` take it: a tokenizer.json,
// a directory holding the tokenizer files, or a GGUF file (recognised by its content; only its
// metadata is read, no family needs to claim it).
STORMO_API Expected<text::ModelText> read_model_text(const std::string& path);

}  // namespace stormo
