// GgufModelView: see gguf_model_view.hpp.
#include "model/gguf_model_view.hpp"

namespace stormo {

GgufModelView::GgufModelView(const GgufModel& model, std::string architecture)
    : model_(model), architecture_(std::move(architecture)) {
    for (const GgufTensorRef& t : model_.tensors()) tensors_.push_back(t.info);
}

const GgufTensorInfo* GgufModelView::tensor(std::string_view name) const {
    const GgufTensorRef* t = model_.find(name);
    return t == nullptr ? nullptr : t->info;
}

const GgufTensorRef* GgufModelView::ref(const GgufTensorInfo* t) const {
    if (t == nullptr) return nullptr;
    const GgufTensorRef* own = model_.find(t->name);
    return own != nullptr && own->info == t ? own : nullptr;
}

// Every GgufTensorInfo a family holds came from this view (tensor() or tensors()), so it is the
// model's: its part is found by name.
const std::string& GgufModelView::file_of(const GgufTensorInfo& t) const {
    const GgufTensorRef* own = ref(&t);
    return own != nullptr ? own->file->path() : path();
}

std::span<const std::byte> GgufModelView::bytes(const GgufTensorInfo& t) const {
    const GgufTensorRef* own = ref(&t);
    if (own == nullptr) return {};
    read_.insert(own->info->name);
    return own->bytes();
}

}  // namespace stormo
