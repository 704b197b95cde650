#pragma once
// A GGUF model: one file, or llama.cpp's split form "<prefix>-00001-of-0000N.gguf" ...
// "<prefix>-0000N-of-0000N.gguf" (gguf-split), where every part carries split.no (u16, from 0),
// split.count (u16) and the first part split.tensors.count (i32, the tensors of all parts); the
// model's metadata is the first part's. Each tensor lives in exactly one part.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

struct GgufTensorRef {
    const GgufFile* file = nullptr;
    const GgufTensorInfo* info = nullptr;
    std::span<const std::byte> bytes() const { return file->bytes(*info); }
};

class STORMO_API GgufModel {
public:
    // `path` is a single GGUF file or any part of a split model (all parts are opened and checked).
    static Expected<GgufModel> open(const std::string& path);

    const GgufHeader& metadata() const { return parts_.front()->header(); }  // the first part's
    const std::vector<std::unique_ptr<GgufFile>>& parts() const { return parts_; }
    // Tensors of all parts, in part order then file order.
    const std::vector<GgufTensorRef>& tensors() const { return tensors_; }
    const GgufTensorRef* find(std::string_view name) const;

private:
    std::vector<std::unique_ptr<GgufFile>> parts_;  // heap-held: tensors_ points into them
    std::vector<GgufTensorRef> tensors_;
    std::map<std::string_view, size_t, std::less<>> by_name_;  // views of names held by parts_
};

// "<prefix>-%05d-of-%05d.gguf" as llama.cpp names a part (llama_split_path), numbered from 1.
STORMO_API std::string gguf_split_path(std::string_view prefix, int part, int count);
// The "<prefix>" of a path named as a part of a split model, or nothing when it is not so named.
STORMO_API std::optional<std::string> gguf_split_prefix(std::string_view path);

}  // namespace stormo
