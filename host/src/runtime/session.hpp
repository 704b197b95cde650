#pragma once
// A session owns the KV cache (in the layout each layer's plan declares), the position (the number
// of valid KV rows) and the token ids consumed so far. A failed request rewinds to where it started.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

class Session {
public:
    // max_block: the most positions one forward step consumes (it sizes sliding-window rings).
    // rewind_slack: how many more positions a rewind may go back without a replay (a chat that
    // rewinds past its last answer every turn keeps its sliding windows with an answer's worth).
    Session(const Model& model, size_t capacity, size_t max_block = kDefaultMaxBlock, size_t rewind_slack = 0);
    static constexpr size_t kDefaultMaxBlock = 256;

    size_t position() const { return position_; }
    size_t capacity() const { return capacity_; }
    size_t remaining() const { return capacity_ - position_; }
    size_t max_block() const { return max_block_; }
    // The token ids of positions [0, position()).
    std::span<const int32_t> tokens() const { return tokens_; }
    // Rows a buffer needs: the capacity, or a window's ring.
    static size_t rows_for(const KvBufferDecl& decl, size_t capacity, size_t max_block, size_t rewind_slack = 0);
    KvView kv(int layer);

    // The forward pass calls this before it writes KV rows for positions below `end` (even if the
    // block then fails): from then on a ring of R rows may have lost every position below end - R.
    void will_write(size_t end);
    // A block's KV rows are written: its tokens are consumed.
    void advance(std::span<const int32_t> tokens);
    // Forgets every position at or after `position` (no-op when already shorter). If a sliding
    // window's ring no longer holds the positions the next query needs (its window before
    // `position`), the session needs a replay: the next forward recomputes the KV from tokens().
    void rewind(size_t position);
    bool needs_replay() const { return needs_replay_; }
    // The forward pass has recomputed the KV of every position [0, position()) from tokens().
    void replayed();

    uint64_t kv_bytes() const;

private:
    struct Ring {
        size_t rows = 0;
        size_t window = 0;
    };
    // Whether every ring still holds the window a query at `position` attends to.
    bool rings_hold_window_for(size_t position) const;

    size_t capacity_;
    size_t max_block_;
    size_t position_ = 0;
    std::vector<int32_t> tokens_;
    // One past the furthest position written since the rings were last filled from position 0; a
    // ring of R rows holds exactly the positions [written_end_ - R, position_).
    size_t written_end_ = 0;
    bool needs_replay_ = false;
    std::vector<Ring> rings_;  // one per windowed KV buffer
    std::vector<std::vector<size_t>> rows_;  // [layer][kv buffer]
    std::vector<std::vector<AlignedBuffer>> buffers_;  // [layer][kv buffer]
};

}  // namespace stormo
