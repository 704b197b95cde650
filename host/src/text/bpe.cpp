#include "text/bpe.hpp"

#include <queue>

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
    bpe.token_to_id_.reserve(bpe.id_to_token_.size());
    bpe.small_char_id_.assign(kSmallCharLimit, -1);
    for (size_t id = 0; id < bpe.id_to_token_.size(); ++id) {
        const std::string& t = bpe.id_to_token_[id];
        if (t.empty()) continue;
        bpe.token_to_id_.emplace(t, static_cast<int32_t>(id));
        const utf8::Step st = utf8::read(t, 0);
        if (st.valid && st.length == t.size() && st.cp < kSmallCharLimit) bpe.small_char_id_[st.cp] = static_cast<int32_t>(id);
    }
    bpe.merges_.reserve(config.merges.size());
    std::string joined;
    for (size_t rank = 0; rank < config.merges.size(); ++rank) {
        const auto& [a, b] = config.merges[rank];
        const auto ida = bpe.id(a);
        const auto idb = bpe.id(b);
        joined.assign(a).append(b);
        const auto idj = bpe.id(joined);
        const std::string* missing = !ida ? &a : !idb ? &b : !idj ? &joined : nullptr;
        if (missing)
            return fail(ErrorKind::format, where + ".merges[" + std::to_string(rank) + "]: token '" + *missing + "' is not in model.vocab");
        // A pair listed twice takes its last rank: the reference collects merges into a map in order.
        bpe.merges_.insert_or_assign(pair_key(*ida, *idb), Merge{static_cast<int32_t>(rank), *idj});
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
    const auto it = token_to_id_.find(token);
    if (it == token_to_id_.end()) return std::nullopt;
    return it->second;
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

void Bpe::merge(std::string_view word, std::vector<int32_t>& out) const {
    std::vector<int32_t> ids;
    std::vector<uint32_t> lens;
    initial_symbols(word, ids, lens);
    const size_t n = ids.size();
    if (n < 2) {
        out.insert(out.end(), ids.begin(), ids.end());
        return;
    }
    // A doubly linked list over the symbols; merged-away symbols get length 0.
    std::vector<int32_t> prev(n), next(n);
    for (size_t i = 0; i < n; ++i) {
        prev[i] = static_cast<int32_t>(i) - 1;
        next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
    }
    struct Candidate {
        int32_t rank, pos, new_id;
        // std::priority_queue is a max-heap: invert so the lowest rank, then leftmost, comes first.
        bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate> queue;
    const auto offer = [&](int32_t pos) {
        const int32_t right = next[static_cast<size_t>(pos)];
        if (right < 0) return;
        const auto it = merges_.find(pair_key(ids[static_cast<size_t>(pos)], ids[static_cast<size_t>(right)]));
        if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
    };
    for (size_t i = 0; i + 1 < n; ++i) offer(static_cast<int32_t>(i));
    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        const auto p = static_cast<size_t>(top.pos);
        if (lens[p] == 0 || next[p] < 0) continue;  // merged away, or nothing to its right now
        const auto r = static_cast<size_t>(next[p]);
        // The pair at this position may have changed since the candidate was queued.
        const auto it = merges_.find(pair_key(ids[p], ids[r]));
        if (it == merges_.end() || it->second.new_id != top.new_id) continue;
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
    if (ignore_merges_) {
        if (const auto whole = id(word)) {
            out.push_back(*whole);
            return;
        }
    }
    const bool cacheable = word.size() <= kCachedWordMax;
    if (cacheable) {
        if (const auto it = cache.words.find(word); it != cache.words.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    const size_t start = out.size();
    merge(word, out);
    if (!cacheable) return;
    if (cache.words.size() >= kCacheLimit) cache.words.clear();
    cache.words.emplace(std::string(word), std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
}

}  // namespace stormo::text
