#pragma once
// A session owns the KV cache (in the layout each layer's plan declares) and the position: the
// number of valid KV rows. A failed request rewinds to where it started.
#include <cstddef>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

class Session {
public:
    // max_block: the most positions one forward step consumes (it sizes sliding-window rings).
    Session(const Model& model, size_t capacity, size_t max_block = kDefaultMaxBlock);
    static constexpr size_t kDefaultMaxBlock = 256;

    size_t position() const { return position_; }
    size_t capacity() const { return capacity_; }
    size_t remaining() const { return capacity_ - position_; }
    size_t max_block() const { return max_block_; }
    // Rows a buffer needs: the capacity, or a window's ring.
    static size_t rows_for(const KvBufferDecl& decl, size_t capacity, size_t max_block);
    KvView kv(int layer);
    // Forgets every position at or after `position` (no-op when already shorter).
    void rewind(size_t position);
    void advance(size_t n) { position_ += n; }
    uint64_t kv_bytes() const;

private:
    size_t capacity_;
    size_t max_block_;
    size_t position_ = 0;
    std::vector<std::vector<size_t>> rows_;  // [layer][kv buffer]
    std::vector<std::vector<AlignedBuffer>> buffers_;  // [layer][kv buffer]
};

}  // namespace stormo
