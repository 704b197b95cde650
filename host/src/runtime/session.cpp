#include "runtime/session.hpp"

#include <algorithm>

namespace stormo {

size_t Session::rows_for(const KvBufferDecl& decl, size_t capacity, size_t max_block) {
    if (decl.window == 0) return capacity;
    return std::max<size_t>(1, std::min(capacity, decl.window + max_block - 1));
}

Session::Session(const Model& model, size_t capacity, size_t max_block)
    : capacity_(capacity), max_block_(std::max<size_t>(1, max_block)) {
    buffers_.resize(static_cast<size_t>(model.n_layers()));
    rows_.resize(static_cast<size_t>(model.n_layers()));
    for (int l = 0; l < model.n_layers(); ++l)
        for (const auto& decl : model.layer_plan(l).kv) {
            const size_t rows = rows_for(decl, capacity, max_block_);
            rows_[static_cast<size_t>(l)].push_back(rows);
            buffers_[static_cast<size_t>(l)].emplace_back(std::max<size_t>(1, rows * decl.floats_per_position * sizeof(float)));
        }
}

KvView Session::kv(int layer) {
    KvView view;
    view.capacity = capacity_;
    view.rows = rows_[static_cast<size_t>(layer)];
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
