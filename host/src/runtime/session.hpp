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
#include <string>
#include <vector>

#include "runtime/page_pool.hpp"
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

// KV pages: every full-attention buffer of every layer keeps its positions in pages of
// kPagePositions positions; one page holds those positions of all of them. A session reaches its
// pages through a page table of reference-counted pages and allocates a page when a position in it
// is first written. Sessions that hold the same prompt prefix hold its pages once (share_prefix);
// a session that writes into a page another session also holds copies it first, so nothing a
// session does (a new token, a rewind and rewrite, a failed request, a replay) changes a page
// another holds. Sliding windows' rings are the session's own, contiguous, and never shared.
// Sessions that share pages are driven from one thread (a scheduler's): the copy-on-write check
// reads a page's holders, which a share_prefix on another thread could change meanwhile.
class Session {
public:
    // max_block: the most positions one forward step consumes (it sizes sliding-window rings).
    // rewind_slack: how many more positions a rewind may go back without a replay (a chat that
    // rewinds past its last answer every turn keeps its sliding windows with an answer's worth).
    // pool: where its pages come from, shared by the sessions of one engine (made here if null or
    // of another page size).
    Session(const Model& model, size_t capacity, size_t max_block = kDefaultMaxBlock, size_t rewind_slack = 0,
            std::shared_ptr<PagePool> pool = nullptr);
    // Moving keeps every view valid (they point into heap buffers the move hands over); a
    // restored session replaces the one a conversation holds by move assignment.
    Session(Session&&) noexcept = default;
    Session& operator=(Session&&) noexcept = default;
    static constexpr size_t kDefaultMaxBlock = 256;
    static constexpr size_t kPagePositions = 16;

    size_t position() const { return position_; }
    size_t capacity() const { return capacity_; }
    size_t remaining() const { return capacity_ - position_; }
    size_t max_block() const { return max_block_; }
    const std::shared_ptr<PagePool>& page_pool() const { return pool_; }
    // The token ids of positions [0, position()).
    std::span<const int32_t> tokens() const { return tokens_; }
    // Rows a buffer needs: the capacity, or a window's ring.
    static size_t rows_for(const KvBufferDecl& decl, size_t capacity, size_t max_block, size_t rewind_slack = 0);
    // The layer's KV as the forward pass reads and writes it; valid until the session changes
    // (will_write, rewind, share_prefix).
    KvView kv(int layer);

    // The forward pass calls this before it writes KV rows for positions [begin, end) (even if the
    // block then fails): it allocates their pages and copies the ones another session also holds.
    // A replay's block (end <= position()) rewrites rows with the bits they hold: it writes a
    // shared page's rows into a scratch copy that the next call (or replayed()) drops, so the
    // page stays shared. From then on a ring of R rows may have lost every position below end - R,
    // and the rows from position() on are no longer what a snapshot saw.
    void will_write(size_t begin, size_t end);
    // A block's KV rows are written: its tokens are consumed.
    void advance(std::span<const int32_t> tokens);
    // Forgets every position at or after `position` (no-op when already shorter) and lets go of
    // the pages past it. If a sliding window's ring no longer holds the positions the next query
    // needs (its window before `position`), the session needs a replay: the next forward
    // recomputes the KV from tokens().
    void rewind(size_t position);
    bool needs_replay() const { return needs_replay_; }
    // Marks this moment. Restoring it later gives back this position, these tokens and the state
    // buffers' bits; rows before the position that were rewritten since (a rewind below it and
    // other tokens after) are recomputed by a replay, as after any rewind that lost them.
    SessionSnapshot snapshot();
    void restore(const SessionSnapshot& snapshot);
    // The forward pass has recomputed the KV of every position [0, position()) from tokens().
    void replayed();

    // Makes this session hold what `donor` holds of positions [0, positions): the donor's pages of
    // them by reference (the last one too when `positions` ends inside it: whichever session
    // writes there next copies it first), the donor's first `positions` tokens, and a copy of the
    // donor's sliding-window rings and recurrent states. Whatever this session held before is let
    // go; snapshots taken of it before owe a replay when restored. The next forward
    // continues at `positions` with the bits the donor's KV gives, as if this session had run the
    // donor's first `positions` tokens itself. Both sessions must come from the same model; when
    // their rings differ in size (another max_block or rewind slack), or the donor's rings no
    // longer hold the window before `positions` (the donor ran on past it), or a recurrent state
    // is past `positions`, this session replays its prefix on its next forward: the prefix's
    // compute is spent again, the pages stay shared.
    // Errors: `positions` past the donor's position or this session's capacity, or a donor from
    // another model.
    // A server admitting a prompt into this session takes, from the session whose tokens() share
    // the longest start with it, p = reusable_prefix(donor.tokens(), prompt) positions
    // (runtime/generation.hpp: it leaves the prompt's last token to compute, for the logits) when
    // that is more than reusable_prefix(tokens(), prompt), then begins the request with
    // GenerationRequest::whole_context, which keeps those p positions and computes the rest. The
    // donor may be running in the same batch; nothing either does changes the other's bits.
    Expected<void> share_prefix(const Session& donor, size_t positions);

    // The KV bytes of a full context in the layout the model declares (what the memory plan
    // reserves): every position of the full-attention buffers and the rings.
    uint64_t kv_bytes() const;
    // The KV bytes this session holds now: its rings and the pages it holds, pages it shares with
    // other sessions counted in full.
    uint64_t kv_bytes_in_use() const;
    // The bytes of those pages this session shares with another session (each of them is in the
    // kv_bytes_in_use of every session that holds it).
    uint64_t kv_bytes_shared() const;
    // The KV bytes several sessions hold together: each page once, however many of them hold it.
    static uint64_t kv_bytes_in_use(std::span<const Session* const> sessions);
    // The KV bytes a session of this layout holds at `positions` positions it shares with no one:
    // what admitting a request of that many positions costs at most.
    uint64_t kv_bytes_for(size_t positions) const;

    // Per layer, the experts the rows of its last forward step (its last kRoutedRows of them at
    // most) routed to, sorted; empty lists for layers without experts. A hint, not state: no bit
    // depends on it. A session file keeps it so that a restore can read those experts ahead
    // (store/read_ahead.hpp): the first steps after it likely choose them again.
    const std::vector<std::vector<int32_t>>& routed_experts() const { return routed_experts_; }
    void set_routed_experts(std::vector<std::vector<int32_t>> experts) { routed_experts_ = std::move(experts); }
    static constexpr size_t kRoutedRows = 4;

    // --- Raw state: what session files and the prompt cache save and restore -----------------
    // (runtime/session_file.hpp, runtime/prompt_cache.hpp). Two sessions with the same layout()
    // keep the same bits in the same places, whatever their capacity.
    //
    // The layout as text: the page size, and every layer's buffers (kind, window, width). A file
    // or block written under another layout is refused with it. Rings of another size (another
    // max_block or rewind slack) are no other layout: the rows they share carry over by position.
    std::string layout() const;
    size_t written_end() const { return written_end_; }
    // Pages: page p holds positions [p * kPagePositions, (p + 1) * kPagePositions) of every
    // full-attention buffer, page_floats() floats. null: no position in it was ever written.
    size_t page_floats() const { return page_floats_; }
    static size_t pages_for(size_t positions) { return (positions + kPagePositions - 1) / kPagePositions; }
    const float* page(size_t p) const { return p < pages_.size() && pages_[p] != nullptr ? pages_[p]->data : nullptr; }
    // Page p for writing restored rows into: allocated, or copied first when another session also
    // holds it. Only between the writes of a restore and adopt().
    float* own_page(size_t p);
    // Rings and states, in layer order: a sliding window's ring (rows by position modulo rows) or
    // a recurrent layer's state (one row).
    struct RingInfo {
        size_t rows = 0;
        size_t window = 0;  // 0 for a state
        size_t width = 0;   // floats per row
        bool state = false;
    };
    const std::vector<RingInfo>& ring_infos() const { return ring_infos_; }
    std::span<const float> ring_buffer(size_t i) const;
    std::span<float> ring_buffer(size_t i);
    // The row of `position` in ring i (a state's one row for any position).
    const float* ring_row(size_t i, size_t position) const;
    float* ring_row(size_t i, size_t position);
    // The restore is written: the session now holds `tokens` at positions [0, tokens.size()),
    // with rings that hold what a session whose furthest write was `written_end` holds. Pages past
    // the tokens are let go, snapshots taken before owe a replay, and when a ring lacks the window
    // the next query needs, the next forward replays (exact either way).
    // `needs_replay`: the saved session owed a replay itself (its rows are not to be trusted).
    void adopt(std::span<const int32_t> tokens, size_t written_end, bool needs_replay = false);

private:
    struct Ring {
        size_t rows = 0;
        size_t window = 0;
    };
    // One page of every full-attention buffer's rows for kPagePositions positions.
    struct Page {
        explicit Page(std::shared_ptr<PagePool> pool);
        ~Page();
        Page(const Page&) = delete;
        Page& operator=(const Page&) = delete;
        std::shared_ptr<PagePool> pool;  // the page outlives the session that made it when shared
        float* data;
    };
    // Whether every ring still holds the window a query at `position` attends to.
    bool rings_hold_window_for(size_t position) const;
    // Lets go of the pages from `first` on.
    void release_pages_from(size_t first);
    // Points the page table back at the pages a replay block wrote scratch copies of.
    void return_lent_pages();
    // Tells the snapshots held that the rows from `position` on change.
    void mark_written(size_t position);
    uint64_t page_bytes() const { return static_cast<uint64_t>(page_floats_) * sizeof(float); }

    size_t capacity_;
    size_t max_block_;
    size_t position_ = 0;
    std::vector<int32_t> tokens_;
    // One past the furthest position written since the rings were last filled from position 0; a
    // ring of R rows holds exactly the positions [written_end_ - R, position_).
    size_t written_end_ = 0;
    bool needs_replay_ = false;
    std::vector<Ring> rings_;  // one per windowed KV buffer
    std::vector<RingInfo> ring_infos_;  // one per ring or state buffer, as ring_bases_
    std::vector<std::string> layout_lines_;
    uint64_t kv_bytes_ = 0;
    // Views point into these: all sized once, never reallocated. Every ring and state buffer, in
    // layer order, is the session's own and lives in one allocation (large enough for huge pages
    // on the big shapes, where a 4 KiB page's first write costs more than the data).
    AlignedBuffer ring_memory_;
    std::vector<float*> ring_bases_;  // [ring]: its first float in ring_memory_, a ring's one-page table
    uint64_t ring_bytes_ = 0;         // every ring's and state's bytes, as memory is counted
    size_t page_floats_ = 0;  // floats of one page: every full-attention buffer's rows
    std::shared_ptr<PagePool> pool_;
    std::vector<std::shared_ptr<Page>> pages_;  // [page]: null until a position in it is written
    std::vector<float*> page_table_;            // [page]: pages_[page]'s floats, or null
    // A replay's scratch pages (see will_write) and the pages whose table entries point at them.
    std::vector<std::unique_ptr<Page>> scratch_;
    std::vector<size_t> lent_;
    std::vector<std::vector<KvBufferView>> layers_;  // [layer][kv buffer]
    std::vector<float*> states_;               // every state buffer (one row each)
    std::vector<size_t> state_floats_;
    std::vector<std::weak_ptr<SessionSnapshot::Watch>> watches_;  // the snapshots still held
    std::vector<std::vector<int32_t>> routed_experts_;
};

}  // namespace stormo
