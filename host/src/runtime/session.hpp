#pragma once
// A session is one sequence's state: the KV cache (in the layout each layer's plan declares: rows
// per position, sliding-window rings, a recurrent layer's state), the position (the number of
// valid positions) and the token ids consumed so far. A failed request rewinds to where it
// started; a snapshot marks a moment to come back to (a draft to reject, a turn to undo) with the
// copies that in-place state needs. The forward pass, a batched step and a replay treat every
// session alike.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

// What a session held at one moment (Session::snapshot): its position and tokens, the copies of
// its state buffers, and a watch on the positions written since, which tells whether the rows
// before the snapshot's position are still the ones it saw.
struct SessionSnapshot {
    size_t position = 0;
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> states;  // every state buffer, in layer and buffer order
    bool needs_replay = false;
    struct Watch {
        size_t lowest_write = SIZE_MAX;  // the lowest position written since the snapshot
    };
    std::shared_ptr<Watch> watch;
};

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

    // The forward pass calls this before it writes KV rows for positions [position(), end) (even
    // if the block then fails): from then on a ring of R rows may have lost every position below
    // end - R, and the rows from position() on are no longer what a snapshot saw.
    void will_write(size_t end);
    // A block's KV rows are written: its tokens are consumed.
    void advance(std::span<const int32_t> tokens);
    // Forgets every position at or after `position` (no-op when already shorter). If a sliding
    // window's ring no longer holds the positions the next query needs (its window before
    // `position`), the session needs a replay: the next forward recomputes the KV from tokens().
    void rewind(size_t position);
    bool needs_replay() const { return needs_replay_; }
    // Marks this moment. Restoring it later gives back this position, these tokens and the state
    // buffers' bits; rows before the position that were rewritten since (a rewind below it and
    // other tokens after) are recomputed by a replay, as after any rewind that lost them.
    SessionSnapshot snapshot();
    void restore(const SessionSnapshot& snapshot);
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
    std::vector<float*> states_;               // every state buffer (one row each)
    std::vector<size_t> state_floats_;
    std::vector<std::weak_ptr<SessionSnapshot::Watch>> watches_;  // the snapshots still held
    std::vector<std::vector<size_t>> rows_;  // [layer][kv buffer]
    std::vector<std::vector<AlignedBuffer>> buffers_;  // [layer][kv buffer]
};

}  // namespace stormo
