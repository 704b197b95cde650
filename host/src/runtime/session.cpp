#include "runtime/session.hpp"

#include <algorithm>

namespace stormo {

size_t Session::rows_for(const KvBufferDecl& decl, size_t capacity, size_t max_block, size_t rewind_slack) {
    if (decl.kind == KvBufferDecl::Kind::state) return 1;
    if (decl.window == 0) return capacity;
    return std::max<size_t>(1, std::min(capacity, decl.window + max_block - 1 + rewind_slack));
}

Session::Session(const Model& model, size_t capacity, size_t max_block, size_t rewind_slack)
    : capacity_(capacity), max_block_(std::max<size_t>(1, max_block)) {
    buffers_.resize(static_cast<size_t>(model.n_layers()));
    rows_.resize(static_cast<size_t>(model.n_layers()));
    for (int l = 0; l < model.n_layers(); ++l)
        for (const auto& decl : model.layer_plan(l).kv) {
            const size_t rows = rows_for(decl, capacity, max_block_, rewind_slack);
            rows_[static_cast<size_t>(l)].push_back(rows);
            buffers_[static_cast<size_t>(l)].emplace_back(std::max<size_t>(1, rows * decl.floats_per_position * sizeof(float)));
            if (decl.kind == KvBufferDecl::Kind::state) {
                states_.push_back(reinterpret_cast<float*>(buffers_[static_cast<size_t>(l)].back().data()));
                state_floats_.push_back(decl.floats_per_position);
            } else if (decl.window > 0) {
                rings_.push_back(Ring{rows, decl.window});
            }
        }
}

KvView Session::kv(int layer) {
    KvView view;
    view.capacity = capacity_;
    view.rows = rows_[static_cast<size_t>(layer)];
    for (auto& b : buffers_[static_cast<size_t>(layer)]) view.buffers.push_back(reinterpret_cast<float*>(b.data()));
    return view;
}

void Session::will_write(size_t end) {
    written_end_ = std::max(written_end_, end);
    std::erase_if(watches_, [&](const std::weak_ptr<SessionSnapshot::Watch>& w) {
        auto watch = w.lock();
        if (watch) watch->lowest_write = std::min(watch->lowest_write, position_);
        return !watch;
    });
}

SessionSnapshot Session::snapshot() {
    SessionSnapshot s;
    s.position = position_;
    s.tokens = tokens_;
    s.needs_replay = needs_replay_;
    for (size_t i = 0; i < states_.size(); ++i) s.states.emplace_back(states_[i], states_[i] + state_floats_[i]);
    s.watch = std::make_shared<SessionSnapshot::Watch>();
    watches_.push_back(s.watch);
    return s;
}

void Session::restore(const SessionSnapshot& s) {
    const bool rows_kept = s.watch != nullptr && s.watch->lowest_write >= s.position;
    position_ = s.position;
    tokens_ = s.tokens;
    for (size_t i = 0; i < states_.size() && i < s.states.size(); ++i) std::copy(s.states[i].begin(), s.states[i].end(), states_[i]);
    // Rewritten rows, or a ring that wrapped past the window the next query needs, owe a replay.
    needs_replay_ = s.needs_replay || !rows_kept || (position_ > 0 && !rings_hold_window_for(position_));
    if (position_ == 0) needs_replay_ = false;
}

void Session::advance(std::span<const int32_t> tokens) {
    tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
    position_ += tokens.size();
}

bool Session::rings_hold_window_for(size_t position) const {
    for (const Ring& ring : rings_) {
        // The query at `position` sees keys [position - window + 1, position).
        const size_t first_seen = position + 1 > ring.window ? position + 1 - ring.window : 0;
        const size_t first_kept = written_end_ > ring.rows ? written_end_ - ring.rows : 0;
        if (first_seen < position && first_kept > first_seen) return false;
    }
    return true;
}

void Session::rewind(size_t position) {
    if (position >= position_) return;
    position_ = position;
    tokens_.resize(position);
    if (position == 0) {
        // Nothing before position 0 is needed: the rings start over.
        written_end_ = 0;
        needs_replay_ = false;
        return;
    }
    // A replay still owed stays owed: a failed or unfinished one leaves the rings unknown. A state
    // buffer holds the state after the last position only: going back needs a replay.
    if (!needs_replay_) needs_replay_ = !states_.empty() || !rings_hold_window_for(position);
}

void Session::replayed() {
    // The replay wrote positions [0, position_) in order, so each ring's last rows are the newest.
    written_end_ = position_;
    needs_replay_ = false;
}

uint64_t Session::kv_bytes() const {
    uint64_t total = 0;
    for (const auto& layer : buffers_)
        for (const auto& b : layer) total += b.size();
    return total;
}

}  // namespace stormo
