#pragma once
// The manifest of a stormo container (`stormo convert`, docs/convert.md): what the data file holds
// and where, the hash of every tensor, the source it was made from and the files copied beside it.
// A directory is a container when it holds this file; it is written last, so a directory without
// it is a conversion that did not finish.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

inline constexpr const char* kContainerManifestFile = "stormo-container.json";
inline constexpr const char* kContainerDataFile = "weights.stormo";
// The metadata of a GGUF source (tokenizer, chat template), as a GGUF file without tensors.
inline constexpr const char* kContainerGgufMetadataFile = "tokenizer.gguf";
inline constexpr const char* kContainerFormat = "stormo-container";
// Raised when a reader of the previous version would misread the new one; readers refuse a newer
// version instead of guessing.
inline constexpr int64_t kContainerFormatVersion = 1;
// Every tensor, and each expert's range, starts at a multiple of this: O_DIRECT reads need it.
inline constexpr uint64_t kContainerAlignment = 4096;

// A run of a tensor's bytes in the data file. Most tensors are one piece; a tensor stacking every
// routed expert of a layer is one piece per expert, each beside that expert's other parts.
struct ContainerPiece {
    uint64_t offset = 0;
    uint64_t nbytes = 0;
};

struct ContainerTensor {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    std::string role;  // "dense", "experts", "draft": where it lies (dense first, then the experts)
    std::string sha256;  // of its bytes in tensor order
    std::vector<ContainerPiece> pieces;  // in tensor order
    uint64_t nbytes() const;
};

// One routed expert's range: every part of it, adjacent.
struct ContainerExpert {
    int layer = 0;
    int expert = 0;
    uint64_t offset = 0;
    uint64_t nbytes = 0;
};

// A file copied beside the data (config.json, the tokenizer's files) and its hash.
struct ContainerFile {
    std::string name;
    std::string sha256;
};

struct ContainerSourceFile {
    std::string name;
    uint64_t bytes = 0;
};

struct ContainerManifest {
    int64_t format_version = kContainerFormatVersion;
    uint64_t alignment = kContainerAlignment;
    std::string data_file = kContainerDataFile;
    uint64_t data_bytes = 0;
    // The source: the path given, its kind ("safetensors", "gguf"), the family that read it and
    // its files with their sizes.
    std::string source_path;
    std::string source_kind;
    std::string family;
    std::vector<ContainerSourceFile> source_files;
    std::vector<ContainerFile> files;
    std::optional<std::string> gguf_metadata;  // kContainerGgufMetadataFile when the source was GGUF
    std::vector<ContainerTensor> tensors;
    std::vector<ContainerExpert> experts;
};

// Parses and checks a manifest (`path` names it in errors): the format and a version this build
// reads, every field's type, every tensor's dtype, its bytes against its shape, its pieces aligned
// and inside the data file's declared size.
STORMO_API Expected<ContainerManifest> parse_container_manifest(std::string_view text, const std::string& path);

// True when `dir` holds a container manifest (what recognise_model_path tells a container by).
STORMO_API bool holds_container_manifest(const std::string& dir);

// The manifest of the container at `dir`, read (with a size cap) and checked.
STORMO_API Expected<ContainerManifest> read_container_manifest(const std::string& dir);

// The manifest as JSON text.
STORMO_API std::string encode_container_manifest(const ContainerManifest& manifest);

}  // namespace stormo
