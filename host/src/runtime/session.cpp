#include "runtime/session.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <unordered_set>

namespace stormo {
namespace {

constexpr size_t kRowAlignmentFloats = 16;  // each buffer's rows in a page start on a cache line
constexpr size_t kRingAlignment = 64;

}  // namespace

// A page is written whole sooner or later (a load or a cache restore at once, a prefill block by
// block); its slot is mapped already (the pool's slabs are).
Session::Page::Page(std::shared_ptr<PagePool> from) : pool(std::move(from)), data(static_cast<float*>(pool->acquire())) {}

Session::Page::~Page() { pool->release(data); }

size_t Session::rows_for(const KvBufferDecl& decl, size_t capacity, size_t max_block, size_t rewind_slack) {
    if (decl.kind == KvBufferDecl::Kind::state) return 1;
    if (decl.window == 0) return capacity;
    return std::max<size_t>(1, std::min(capacity, decl.window + max_block - 1 + rewind_slack));
}

Session::Session(const Model& model, size_t capacity, size_t max_block, size_t rewind_slack, std::shared_ptr<PagePool> pool)
    : capacity_(capacity), max_block_(std::max<size_t>(1, max_block)) {
    const size_t n_layers = static_cast<size_t>(model.n_layers());
    size_t n_rings = 0;
    for (size_t l = 0; l < n_layers; ++l)
        for (const auto& decl : model.layer_plan(static_cast<int>(l)).kv)
            n_rings += decl.kind == KvBufferDecl::Kind::state || decl.window > 0 ? 1 : 0;
    ring_bases_.reserve(n_rings);
    std::vector<size_t> ring_offsets;
    std::vector<size_t> state_rings;  // which rings are states
    size_t ring_bytes = 0;
    pages_.resize(pages_for(capacity));
    page_table_.assign(pages_.size(), nullptr);
    layers_.resize(n_layers);
    for (size_t l = 0; l < n_layers; ++l)
        for (const auto& decl : model.layer_plan(static_cast<int>(l)).kv) {
            const size_t rows = rows_for(decl, capacity, max_block_, rewind_slack);
            kv_bytes_ += static_cast<uint64_t>(rows) * decl.floats_per_position * sizeof(float);
            KvBufferView view;
            view.rows = std::max<size_t>(1, rows);
            view.width = decl.floats_per_position;
            if (decl.kind == KvBufferDecl::Kind::state || decl.window > 0) {
                const size_t bytes = std::max<size_t>(1, rows * decl.floats_per_position * sizeof(float));
                ring_offsets.push_back(ring_bytes);
                ring_bases_.push_back(nullptr);  // set once ring_memory_ is allocated below
                ring_bytes_ += bytes;
                ring_bytes += (bytes + kRingAlignment - 1) / kRingAlignment * kRingAlignment;
                view.pages = &ring_bases_.back();
                view.page_rows = view.rows;
                const bool state = decl.kind == KvBufferDecl::Kind::state;
                ring_infos_.push_back(RingInfo{view.rows, state ? 0 : decl.window, decl.floats_per_position, state});
                if (state) {
                    state_rings.push_back(ring_bases_.size() - 1);
                    state_floats_.push_back(decl.floats_per_position);
                } else {
                    rings_.push_back(Ring{rows, decl.window});
                }
            } else {
                view.pages = page_table_.data();
                view.page_rows = kPagePositions;
                view.offset = page_floats_;
                const size_t floats = kPagePositions * decl.floats_per_position;
                page_floats_ += (floats + kRowAlignmentFloats - 1) / kRowAlignmentFloats * kRowAlignmentFloats;
            }
            layers_[l].push_back(view);
            layout_lines_.push_back("layer " + std::to_string(l) + ": " +
                                    (decl.kind == KvBufferDecl::Kind::state ? std::string("state")
                                     : decl.window > 0 ? "window " + std::to_string(decl.window)
                                                       : std::string("every position")) +
                                    " of " + std::to_string(decl.floats_per_position) + " floats");
        }
    if (ring_bytes > 0) {
        ring_memory_ = AlignedBuffer(ring_bytes, kRingAlignment);
        map_now(ring_memory_.data(), ring_bytes);
    }
    for (size_t i = 0; i < ring_bases_.size(); ++i) ring_bases_[i] = reinterpret_cast<float*>(ring_memory_.data() + ring_offsets[i]);
    for (size_t i : state_rings) states_.push_back(ring_bases_[i]);
    const size_t page_bytes = std::max<size_t>(1, page_floats_) * sizeof(float);
    pool_ = pool != nullptr && pool->page_bytes() == page_bytes ? std::move(pool) : std::make_shared<PagePool>(page_bytes);
}

KvView Session::kv(int layer) {
    KvView view;
    view.capacity = capacity_;
    view.buffers = layers_[static_cast<size_t>(layer)];
    return view;
}

void Session::will_write(size_t begin, size_t end) {
    written_end_ = std::max(written_end_, end);
    mark_written(position_);
    return_lent_pages();
    if (page_floats_ == 0) return;
    size_t scratch_used = 0;
    for (size_t p = begin / kPagePositions; p < std::min(pages_for(end), pages_.size()); ++p) {
        std::shared_ptr<Page>& page = pages_[p];
        if (page != nullptr && page.use_count() == 1) continue;
        if (page != nullptr && end <= position_) {
            // A replay rewrites positions the session holds, with the bits they have: the page
            // stays shared and this block writes into a scratch copy of it instead.
            if (scratch_used == scratch_.size()) scratch_.push_back(std::make_unique<Page>(pool_));
            float* scratch = scratch_[scratch_used++]->data;
            std::copy_n(page->data, page_floats_, scratch);
            page_table_[p] = scratch;
            lent_.push_back(p);
            continue;
        }
        auto own = std::make_shared<Page>(pool_);
        // Copy on write: the rows before the block's stay as the shared page holds them.
        if (page != nullptr) std::copy_n(page->data, page_floats_, own->data);
        page = std::move(own);
        page_table_[p] = page->data;
    }
}

void Session::mark_written(size_t position) {
    std::erase_if(watches_, [&](const std::weak_ptr<SessionSnapshot::Watch>& w) {
        auto watch = w.lock();
        if (watch) watch->lowest_write = std::min(watch->lowest_write, position);
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
    // The rows from first_changed on may not be the ones the snapshot saw: written since, or let
    // go by a rewind below the snapshot.
    size_t first_changed = s.watch != nullptr ? s.watch->lowest_write : 0;
    for (size_t p = 0; page_floats_ > 0 && p < pages_for(s.position); ++p)
        if (pages_[p] == nullptr) {
            first_changed = std::min(first_changed, p * kPagePositions);
            break;
        }
    const bool rows_kept = first_changed >= s.position;
    position_ = s.position;
    tokens_ = s.tokens;
    // The replay writes changed rows into fresh pages (it gives a page it finds shared a scratch
    // copy, which would be right only for rows that hold the bits it recomputes).
    release_pages_from(rows_kept ? pages_for(position_) : std::min(first_changed, position_) / kPagePositions);
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

void Session::return_lent_pages() {
    for (size_t p : lent_) page_table_[p] = pages_[p] != nullptr ? pages_[p]->data : nullptr;
    lent_.clear();
}

void Session::release_pages_from(size_t first) {
    return_lent_pages();
    for (size_t p = first; p < pages_.size(); ++p) {
        pages_[p].reset();
        page_table_[p] = nullptr;
    }
}

void Session::rewind(size_t position) {
    if (position > position_) return;
    // Pages a failed block allocated past the position go too.
    release_pages_from(pages_for(position));
    if (position == position_) return;
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
    return_lent_pages();
    scratch_.clear();
    // The replay wrote positions [0, position_) in order, so each ring's last rows are the newest.
    written_end_ = position_;
    needs_replay_ = false;
}

Expected<void> Session::share_prefix(const Session& donor, size_t positions) {
    if (&donor == this) return fail(ErrorKind::internal, "a session cannot share a prefix with itself");
    if (positions > donor.position_ || positions > capacity_)
        return fail(ErrorKind::internal, "sharing a prefix of " + std::to_string(positions) + " positions from a session at " +
                                             std::to_string(donor.position_) + " into one of " + std::to_string(capacity_) +
                                             " positions");
    bool same_layout = donor.page_floats_ == page_floats_ && donor.layers_.size() == layers_.size();
    for (size_t l = 0; same_layout && l < layers_.size(); ++l) {
        same_layout = donor.layers_[l].size() == layers_[l].size();
        for (size_t b = 0; same_layout && b < layers_[l].size(); ++b)
            same_layout = donor.layers_[l][b].width == layers_[l][b].width && donor.layers_[l][b].offset == layers_[l][b].offset;
    }
    if (!same_layout) return fail(ErrorKind::internal, "sharing a prefix between sessions of different models");

    mark_written(0);  // a snapshot of what this session held before sees none of it again
    position_ = positions;
    tokens_.assign(donor.tokens_.begin(), donor.tokens_.begin() + static_cast<ptrdiff_t>(positions));
    const size_t shared = pages_for(positions);
    for (size_t p = 0; p < shared; ++p) {
        pages_[p] = donor.pages_[p];
        page_table_[p] = pages_[p] != nullptr ? pages_[p]->data : nullptr;
    }
    release_pages_from(shared);
    if (positions == 0) {
        written_end_ = 0;
        needs_replay_ = false;
        return {};
    }
    bool same_rings = rings_.size() == donor.rings_.size();
    for (size_t i = 0; same_rings && i < rings_.size(); ++i) same_rings = rings_[i].rows == donor.rings_[i].rows;
    if (!same_rings) {
        needs_replay_ = true;
        return {};
    }
    // The donor's rings and states as they are: this session is the donor rewound to `positions`
    // (a state holds the donor's last position only, so anything shorter replays, as a rewind).
    for (size_t i = 0; i < ring_bases_.size(); ++i) std::ranges::copy(donor.ring_buffer(i), ring_buffer(i).begin());
    written_end_ = donor.written_end_;
    needs_replay_ = donor.needs_replay_ || !rings_hold_window_for(positions) ||
                    (!states_.empty() && positions != donor.position_);
    return {};
}

std::string Session::layout() const {
    std::string out = "pages of " + std::to_string(kPagePositions) + " positions, " + std::to_string(page_floats_) + " floats";
    for (const std::string& line : layout_lines_) out += "; " + line;
    return out;
}

float* Session::own_page(size_t p) {
    std::shared_ptr<Page>& page = pages_[p];
    if (page == nullptr || page.use_count() > 1) {
        auto own = std::make_shared<Page>(pool_);
        if (page != nullptr) std::copy_n(page->data, page_floats_, own->data);
        page = std::move(own);
    }
    page_table_[p] = page->data;
    return page->data;
}

std::span<const float> Session::ring_buffer(size_t i) const {
    return {ring_bases_[i], ring_infos_[i].rows * ring_infos_[i].width};
}

std::span<float> Session::ring_buffer(size_t i) {
    return {ring_bases_[i], ring_infos_[i].rows * ring_infos_[i].width};
}

const float* Session::ring_row(size_t i, size_t position) const {
    return ring_buffer(i).data() + (position % ring_infos_[i].rows) * ring_infos_[i].width;
}

float* Session::ring_row(size_t i, size_t position) {
    return ring_buffer(i).data() + (position % ring_infos_[i].rows) * ring_infos_[i].width;
}

void Session::adopt(std::span<const int32_t> tokens, size_t written_end, bool needs_replay) {
    mark_written(0);
    return_lent_pages();
    scratch_.clear();
    position_ = tokens.size();
    tokens_.assign(tokens.begin(), tokens.end());
    release_pages_from(pages_for(position_));
    written_end_ = std::max(written_end, position_);
    needs_replay_ = position_ > 0 && (needs_replay || !rings_hold_window_for(position_));
}

uint64_t Session::kv_bytes() const { return kv_bytes_; }

uint64_t Session::kv_bytes_in_use() const {
    uint64_t total = ring_bytes_;
    for (const auto& page : pages_) total += page != nullptr ? page_bytes() : 0;
    return total + scratch_.size() * page_bytes();
}

uint64_t Session::kv_bytes_shared() const {
    uint64_t total = 0;
    for (const auto& page : pages_) total += page != nullptr && page.use_count() > 1 ? page_bytes() : 0;
    return total;
}

uint64_t Session::kv_bytes_in_use(std::span<const Session* const> sessions) {
    uint64_t total = 0;
    std::unordered_set<const Page*> seen;
    for (const Session* s : sessions) {
        total += s->ring_bytes_;
        for (const auto& page : s->pages_)
            if (page != nullptr && seen.insert(page.get()).second) total += s->page_bytes();
        total += s->scratch_.size() * s->page_bytes();
    }
    return total;
}

uint64_t Session::kv_bytes_for(size_t positions) const {
    return ring_bytes_ + static_cast<uint64_t>(pages_for(std::min(positions, capacity_))) * page_bytes();
}

}  // namespace stormo
