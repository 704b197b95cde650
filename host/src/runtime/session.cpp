#include "runtime/session.hpp"

#include <algorithm>

namespace stormo {

Session::Session(const Model& model, size_t capacity) : capacity_(capacity) {
    buffers_.resize(static_cast<size_t>(model.n_layers()));
    for (int l = 0; l < model.n_layers(); ++l)
        for (const auto& decl : model.layer_plan(l).kv)
            buffers_[static_cast<size_t>(l)].emplace_back(std::max<size_t>(1, capacity * decl.floats_per_position * sizeof(float)));
}

KvView Session::kv(int layer) {
    KvView view;
    view.capacity = capacity_;
    for (auto& b : buffers_[static_cast<size_t>(layer)]) view.buffers.push_back(reinterpret_cast<float*>(b.data()));
    return view;
}

void Session::rewind(size_t position) { position_ = std::min(position_, position); }

uint64_t Session::kv_bytes() const {
    uint64_t total = 0;
    for (const auto& layer : buffers_)
        for (const auto& b : layer) total += b.size();
    return total;
}

}  // namespace stormo
