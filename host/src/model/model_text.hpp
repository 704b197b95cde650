#pragma once
// What a model's tokenizer and chat template are made from, as the opened model hands it over
// (model/model_bundle.hpp): text/ opens none of a model's files itself, so a GGUF model's header,
// parsed once when the model opened, serves the tokenizer, the template and the weights alike.
#include <memory>
#include <string>

#include "stormo/error.hpp"

namespace stormo {
struct GgufHeader;
}

namespace stormo::text {

// One file as it was read: its path (named in errors) and its bytes, or why they could not be
// read (ErrorKind::missing when nothing is there).
struct TextFile {
    std::string path;
    Expected<std::string> bytes = std::string();
    // Present in any form: what is there but unreadable (a directory, a file over its cap) is
    // refused with its error, not taken as absent.
    bool present() const { return bytes || bytes.error().kind != ErrorKind::missing; }
};

struct ModelText {
    std::string path;  // what was opened: a model directory, a tokenizer.json, a GGUF file
    // A GGUF model: its metadata (the first part's header), with the tokenizer.* keys; null for
    // the other forms. `keeps_gguf` holds what the header lives in.
    const GgufHeader* gguf = nullptr;
    std::shared_ptr<const void> keeps_gguf;
    // Otherwise the Hugging Face files.
    TextFile tokenizer_json;
    TextFile tokenizer_config;  // tokenizer_config.json
    TextFile chat_template;     // chat_template.jinja
};

}  // namespace stormo::text
