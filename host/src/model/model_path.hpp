#pragma once
// What a model path is, told by its content rather than its name: a Hugging Face model directory
// (it holds config.json), a GGUF file (its first four bytes are the magic "GGUF", whatever it is
// called: Ollama keeps its models as "sha256-<hash>" blobs), or a directory holding one GGUF model
// (a file, or the parts of one split). Anything else is refused, saying what the path is not.
#include <string>

#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

enum class ModelPathKind { directory, gguf, container };

struct ModelPath {
    ModelPathKind kind = ModelPathKind::directory;
    std::string path;  // the directory, the container, or the GGUF file to open (in a directory: the one it holds)
};

// True when `file` is a regular file that starts with the GGUF magic.
STORMO_API bool starts_with_gguf_magic(const std::string& file);

STORMO_API Expected<ModelPath> recognise_model_path(const std::string& path);

// An error about the model at `path` given by `origin` ("--model"): "--model PATH: <message>", or
// "--model: <message>" when the message names PATH already, so the path is not said twice.
STORMO_API Error with_model_context(Error error, const std::string& origin, const std::string& path);

}  // namespace stormo
