#include "text/bpe.hpp"

#include <algorithm>

#include "text/utf8.hpp"

namespace stormo::text {

namespace {

constexpr char32_t kSmallCharLimit = 0x800;  // code points of at most two UTF-8 bytes
constexpr size_t kCacheLimit = 1 << 16;      // words kept per encode call before starting over
constexpr size_t kCachedWordMax = 256;       // longer words are rare and not worth keeping

}  // namespace

Expected<Bpe> Bpe::build(BpeConfig config, const std::string& where) {
    Bpe bpe;
    bpe.id_to_token_ = std::move(config.id_to_token);
    bpe.token_to_id_ = TokenIndex(bpe.id_to_token_);
    bpe.small_char_id_.assign(kSmallCharLimit, -1);
    for (size_t id = 0; id < bpe.id_to_token_.size(); ++id) {
        const std::string& t = bpe.id_to_token_[id];
        if (t.empty()) continue;
        const utf8::Step st = utf8::read(t, 0);
        if (st.valid && st.length == t.size() && st.cp < kSmallCharLimit) bpe.small_char_id_[st.cp] = static_cast<int32_t>(id);
    }
    bpe.merges_ = MergeTable(config.merges.size());
    std::string joined;
    for (size_t rank = 0; rank < config.merges.size(); ++rank) {
        const auto& [a, b] = config.merges[rank];
        const auto ida = bpe.id(a);
        const auto idb = bpe.id(b);
        joined.assign(a).append(b);
        const auto idj = bpe.id(joined);
        if (!ida || !idb || !idj) {
            const std::string missing(!ida ? a : !idb ? b : std::string_view(joined));
            return fail(ErrorKind::format, where + ".merges[" + std::to_string(rank) + "]: token '" + missing + "' is not in model.vocab");
        }
        // A pair listed twice takes its last rank: the reference collects merges into a map in order.
        bpe.merges_.insert_or_assign(*ida, *idb, MergeTable::Merge{static_cast<int32_t>(rank), *idj});
    }
    if (config.unk_token) {
        bpe.unk_id_ = bpe.id(*config.unk_token);
        if (!bpe.unk_id_) return fail(ErrorKind::format, where + ".unk_token: '" + *config.unk_token + "' is not in model.vocab");
    }
    bpe.fuse_unk_ = config.fuse_unk;
    bpe.ignore_merges_ = config.ignore_merges;
    return bpe;
}

std::optional<int32_t> Bpe::id(std::string_view token) const {
    return token_to_id_.find(token);
}

std::string_view Bpe::token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return {};
    return id_to_token_[static_cast<size_t>(id)];
}

void Bpe::initial_symbols(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>& lens) const {
    std::optional<std::pair<int32_t, uint32_t>> pending_unk;  // an unknown run not yet pushed
    for (size_t i = 0; i < word.size();) {
        const utf8::Step st = utf8::read(word, i);
        const auto len = static_cast<uint32_t>(st.length);
        std::optional<int32_t> found;
        if (st.valid && st.cp < kSmallCharLimit) {
            if (const int32_t id = small_char_id_[st.cp]; id >= 0) found = id;
        } else {
            found = id(word.substr(i, st.length));
        }
        i += st.length;
        if (found) {
            if (pending_unk) {
                ids.push_back(pending_unk->first), lens.push_back(pending_unk->second);
                pending_unk.reset();
            }
            ids.push_back(*found), lens.push_back(len);
            continue;
        }
        if (!unk_id_) continue;  // no unk token: the reference drops the character
        if (pending_unk && fuse_unk_) {
            pending_unk->second += len;
        } else {
            if (pending_unk) ids.push_back(pending_unk->first), lens.push_back(pending_unk->second);
            pending_unk = std::make_pair(*unk_id_, len);
        }
    }
    if (pending_unk) ids.push_back(pending_unk->first), lens.push_back(pending_unk->second);
}

void Bpe::merge(std::string_view word, BpeCache& scratch, std::vector<int32_t>& out) const {
    auto& ids = scratch.ids;
    auto& lens = scratch.lens;
    ids.clear();
    lens.clear();
    initial_symbols(word, ids, lens);
    const size_t n = ids.size();
    if (n < 2) {
        out.insert(out.end(), ids.begin(), ids.end());
        return;
    }
    // A doubly linked list over the symbols; merged-away symbols get length 0.
    auto& prev = scratch.prev;
    auto& next = scratch.next;
    prev.resize(n);
    next.resize(n);
    for (size_t i = 0; i < n; ++i) {
        prev[i] = static_cast<int32_t>(i) - 1;
        next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
    }
    // A min-heap on (rank, position): the lowest rank first, the leftmost among equal ranks.
    using Candidate = BpeCache::Candidate;
    auto& heap = scratch.heap;
    heap.clear();
    const auto later = [](const Candidate& x, const Candidate& y) { return x.rank != y.rank ? x.rank > y.rank : x.pos > y.pos; };
    const auto offer = [&](int32_t pos) {
        const int32_t right = next[static_cast<size_t>(pos)];
        if (right < 0) return;
        if (const auto* m = merges_.find(ids[static_cast<size_t>(pos)], ids[static_cast<size_t>(right)])) {
            heap.push_back({m->rank, pos, m->new_id});
            std::push_heap(heap.begin(), heap.end(), later);
        }
    };
    for (size_t i = 0; i + 1 < n; ++i) offer(static_cast<int32_t>(i));
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const Candidate top = heap.back();
        heap.pop_back();
        const auto p = static_cast<size_t>(top.pos);
        if (lens[p] == 0 || next[p] < 0) continue;  // merged away, or nothing to its right now
        const auto r = static_cast<size_t>(next[p]);
        // The pair at this position may have changed since the candidate was queued.
        const auto* m = merges_.find(ids[p], ids[r]);
        if (!m || m->new_id != top.new_id) continue;
        ids[p] = top.new_id;
        lens[p] += lens[r];
        lens[r] = 0;
        next[p] = next[r];
        if (next[r] >= 0) prev[static_cast<size_t>(next[r])] = top.pos;
        if (prev[p] >= 0) offer(prev[p]);
        offer(top.pos);
    }
    for (int32_t i = 0; i >= 0; i = next[static_cast<size_t>(i)]) out.push_back(ids[static_cast<size_t>(i)]);
}

void Bpe::encode_word(std::string_view word, BpeCache& cache, std::vector<int32_t>& out) const {
    // The cache holds whole results (ignore_merges ones too), so it is asked first: it is small
    // and hot, unlike the vocabulary.
    const bool cacheable = word.size() <= kCachedWordMax;
    if (cacheable) {
        if (const auto it = cache.words.find(word); it != cache.words.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    const size_t start = out.size();
    const auto whole = ignore_merges_ ? id(word) : std::nullopt;
    if (whole)
        out.push_back(*whole);
    else
        merge(word, cache, out);
    if (!cacheable) return;
    if (cache.words.size() >= kCacheLimit) cache.words.clear();
    cache.words.emplace(std::string(word), std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
}

}  // namespace stormo::text
