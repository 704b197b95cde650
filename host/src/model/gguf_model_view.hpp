#pragma once
// A GGUF model (model/gguf_split.hpp) as the SDK's GgufView, which the family claiming its
// general.architecture maps (stormo/gguf_view.hpp). It refers to the model: the model outlives it.
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf_split.hpp"
#include "stormo/export.hpp"
#include "stormo/gguf_view.hpp"

namespace stormo {

class STORMO_API GgufModelView final : public GgufView {
public:
    GgufModelView(const GgufModel& model, std::string architecture);

    const std::string& path() const override { return model_.metadata().path; }
    const std::string& architecture() const override { return architecture_; }
    const GgufValue* value(std::string_view key) const override { return model_.metadata().find(key); }
    const std::vector<const GgufTensorInfo*>& tensors() const override { return tensors_; }
    const GgufTensorInfo* tensor(std::string_view name) const override;
    const std::string& file_of(const GgufTensorInfo& t) const override;
    std::span<const std::byte> bytes(const GgufTensorInfo& t) const override;

    const GgufModel& model() const { return model_; }
    // The model's record of a tensor the view handed out, or nullptr for one that is not the model's.
    const GgufTensorRef* ref(const GgufTensorInfo* t) const;
    // The tensors whose bytes the family read through bytes() (decoded or reordered by its mapping).
    const std::set<std::string, std::less<>>& read_tensors() const { return read_; }

private:
    const GgufModel& model_;
    std::string architecture_;
    std::vector<const GgufTensorInfo*> tensors_;
    mutable std::set<std::string, std::less<>> read_;
};

}  // namespace stormo
