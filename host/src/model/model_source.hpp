#pragma once
// A model directory as the host reads it (not part of the SDK: plugins see tensors only through
// LoadContext): config, generation config and a validated tensor index.
#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/model_path.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/json.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

struct GgufHeader;

// Where a checkpoint tensor lives: which shard file and which byte range of it.
struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    std::string file;        // absolute path of the shard
    uint64_t offset = 0;     // absolute byte offset in that file
    uint64_t nbytes = 0;
};

class STORMO_API ModelSource {
public:
    virtual ~ModelSource();
    virtual const std::string& directory() const = 0;
    virtual const ModelConfig& config() const = 0;
    // generation_config.json when the directory has one.
    virtual const std::optional<ModelConfig>& generation_config() const = 0;
    virtual const std::vector<TensorInfo>& tensors() const = 0;  // sorted by name
    virtual const TensorInfo* find(std::string_view name) const = 0;
    // Reads bytes [offset, offset + size) of a tensor's data into caller memory with pread.
    virtual Expected<void> read(const TensorInfo& t, uint64_t offset, uint64_t size, void* dst) const = 0;
    // True when the tensor is held in RAM (a GGUF tensor dequantized on load) rather than a byte
    // range of a file: it can be read, never streamed from its file.
    virtual bool in_memory(const TensorInfo&) const { return false; }
    // A GGUF model's metadata (its first part's header), which also holds the tokenizer and the
    // chat template (model/model_bundle.hpp); null for a model directory.
    virtual const GgufHeader* gguf_metadata() const { return nullptr; }
    // Where bytes [offset, offset + size) of a tensor's data start in t.file. Every format but a
    // stormo container stores a tensor as one range; a container stores a tensor stacking every
    // expert as one piece per expert, beside that expert's other parts (docs/convert.md), and a
    // range across two pieces is an error naming the tensor. Inline: see files().
    virtual Expected<uint64_t> file_offset(const TensorInfo& t, uint64_t offset, uint64_t /*size*/) const {
        return t.offset + offset;
    }

    // The distinct files its tensors live in, in the order they first appear; streamable_files:
    // only those holding a tensor that is a byte range of its file (not in_memory).
    // Inline: the store's standalone test builds link no model code.
    std::vector<std::string> files() const {
        return distinct_files([](const TensorInfo&) { return true; });
    }
    std::vector<std::string> streamable_files() const {
        return distinct_files([this](const TensorInfo& t) { return !in_memory(t); });
    }

private:
    template <class Keep>
    std::vector<std::string> distinct_files(Keep keep) const {
        std::vector<std::string> out;
        for (const TensorInfo& t : tensors())
            if (keep(t) && std::find(out.begin(), out.end(), t.file) == out.end()) out.push_back(t.file);
        return out;
    }
};

// Opens and validates a Hugging Face model directory (one model.safetensors, or shards with
// model.safetensors.index.json).
STORMO_API Expected<std::unique_ptr<ModelSource>> open_model_directory(const std::string& dir);

class Family;

// What --model names: a Hugging Face model directory, a GGUF file (any part of a split GGUF model;
// model/gguf_source.hpp), or a directory holding one GGUF model, recognised by content
// (model/model_path.hpp). A GGUF model is mapped by the one of `families` (the loaded family
// plugins) that claims its architecture.
STORMO_API Expected<std::unique_ptr<ModelSource>> open_model_source(const std::string& path,
                                                                   std::span<const Family* const> families);
// The same for a path already recognised.
STORMO_API Expected<std::unique_ptr<ModelSource>> open_model_source(const ModelPath& recognised,
                                                                   std::span<const Family* const> families);

}  // namespace stormo
