#include "tokenizer/bpe.hpp"

#include <algorithm>
#include <climits>

#include "util/utf8.hpp"

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
    std::vector<std::pair<int32_t, int32_t>> pairs;  // by rank
    pairs.reserve(config.merges.size());
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
        pairs.emplace_back(*ida, *idb);
    }
    bpe.index_right_merges(pairs);
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

std::optional<int32_t> Bpe::char_id(std::string_view word, size_t at, const utf8::Step& st) const {
    if (!st.valid || st.cp >= kSmallCharLimit) return id(word.substr(at, st.length));
    if (const int32_t id = small_char_id_[st.cp]; id >= 0) return id;
    return std::nullopt;
}

void Bpe::initial_symbols(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>& starts) const {
    std::optional<std::pair<int32_t, uint32_t>> pending_unk;  // an unknown run not yet pushed (id, start)
    for (size_t i = 0; i < word.size();) {
        const utf8::Step st = utf8::read(word, i);
        const auto at = static_cast<uint32_t>(i);
        const std::optional<int32_t> found = char_id(word, i, st);
        i += st.length;
        if (found) {
            if (pending_unk) {
                ids.push_back(pending_unk->first), starts.push_back(pending_unk->second);
                pending_unk.reset();
            }
            ids.push_back(*found), starts.push_back(at);
            continue;
        }
        if (!unk_id_) continue;  // no unk token: the reference drops the character
        if (pending_unk && fuse_unk_) continue;  // the run grows
        if (pending_unk) ids.push_back(pending_unk->first), starts.push_back(pending_unk->second);
        pending_unk = std::make_pair(*unk_id_, at);
    }
    if (pending_unk) ids.push_back(pending_unk->first), starts.push_back(pending_unk->second);
}

// Where a window's result stops being certain (see merge_settled): symbols before `first` are
// settled. The whole word's symbol at `first` may have grown since the frontier reached it, but
// it still begins with the token `grown_from` and spells the word's characters from there on.
// `lowest` is the lowest rank at which the last settled symbol could merge with it.
struct Bpe::Frontier {
    std::string_view word;  // the whole word, past the window too
    int32_t first = 0;
    int32_t grown_from = 0;
    int32_t lowest = INT32_MAX;
};

bool Bpe::may_begin(std::string_view token_text, std::string_view text) const {
    bool in_unk = false;
    for (size_t i = 0; !token_text.empty(); ) {
        if (i >= text.size()) return false;
        const utf8::Step st = utf8::read(text, i);
        const std::optional<int32_t> found = char_id(text, i, st);
        i += st.length;
        std::string_view piece;
        if (found) {
            piece = token(*found);
        } else if (!unk_id_ || (in_unk && fuse_unk_)) {
            continue;  // dropped, or part of the unknown run before
        } else {
            piece = token(*unk_id_);
        }
        in_unk = !found;
        const size_t k = std::min(piece.size(), token_text.size());
        if (token_text.substr(0, k) != piece.substr(0, k)) return false;
        token_text.remove_prefix(k);
    }
    return true;
}

int32_t Bpe::lowest_merge_before(int32_t left, std::string_view prefix, std::string_view text) const {
    const auto t = static_cast<size_t>(left);
    for (uint32_t i = right_merge_start_[t]; i < right_merge_start_[t + 1]; ++i) {
        const std::string_view right = token(right_merges_[i].right);
        if (right.starts_with(prefix) && may_begin(right, text)) return right_merges_[i].rank;
    }
    return INT32_MAX;
}

void Bpe::run_merges(BpeCache& scratch, Frontier* frontier) const {
    auto& ids = scratch.ids;
    const size_t n = ids.size();
    // A doubly linked list over the symbols; merged-away symbols get id -1.
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
    // The lowest rank at which the last settled symbol could merge with what follows it.
    const auto check_last = [&] {
        const auto first = static_cast<size_t>(frontier->first);
        const int32_t last = prev[first];
        frontier->lowest = last < 0 ? INT32_MAX
                                    : lowest_merge_before(ids[static_cast<size_t>(last)], token(frontier->grown_from),
                                                          frontier->word.substr(scratch.starts[first]));
    };
    // The frontier moves left past the last settled symbol.
    const auto unsettle_last = [&] {
        frontier->first = prev[static_cast<size_t>(frontier->first)];
        frontier->grown_from = ids[static_cast<size_t>(frontier->first)];
        check_last();
    };
    // Unsettles every last settled symbol that could have merged with its right neighbour in the
    // whole word before a settled merge of rank `rank` (or ever, at the end).
    const auto settle_before = [&](int32_t rank) {
        while (prev[static_cast<size_t>(frontier->first)] >= 0 && frontier->lowest < rank) unsettle_last();
    };
    if (frontier) check_last();
    for (size_t i = 0; i + 1 < n; ++i) offer(static_cast<int32_t>(i));
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const Candidate top = heap.back();
        heap.pop_back();
        const auto p = static_cast<size_t>(top.pos);
        if (ids[p] < 0 || next[p] < 0) continue;  // merged away, or nothing to its right now
        const auto r = static_cast<size_t>(next[p]);
        // The pair at this position may have changed since the candidate was queued.
        const auto* m = merges_.find(ids[p], ids[r]);
        if (!m || m->new_id != top.new_id) continue;
        const bool settled = frontier && top.pos <= prev[static_cast<size_t>(frontier->first)];
        if (settled) {
            settle_before(top.rank);
            // A merge with an unsettled symbol might go otherwise in the whole word.
            if (top.pos == prev[static_cast<size_t>(frontier->first)]) unsettle_last();
        }
        ids[p] = top.new_id;
        ids[r] = -1;
        next[p] = next[r];
        if (next[r] >= 0) prev[static_cast<size_t>(next[r])] = top.pos;
        if (prev[p] >= 0) offer(prev[p]);
        offer(top.pos);
        if (settled && prev[static_cast<size_t>(frontier->first)] == top.pos) check_last();  // a new last settled symbol
    }
    if (frontier) settle_before(INT32_MAX);
}

void Bpe::merge(std::string_view word, BpeCache& scratch, std::vector<int32_t>& out) const {
    scratch.ids.clear();
    scratch.starts.clear();
    initial_symbols(word, scratch.ids, scratch.starts);
    const auto& ids = scratch.ids;
    if (ids.size() < 2) {
        out.insert(out.end(), ids.begin(), ids.end());
        return;
    }
    run_merges(scratch, nullptr);
    for (int32_t i = 0; i >= 0; i = scratch.next[static_cast<size_t>(i)]) out.push_back(ids[static_cast<size_t>(i)]);
}

// Why a window's settled prefix is the whole word's. The reference merges the pair of lowest
// (rank, position) first. The window's symbols before the frontier are settled: they agree with
// the whole word's (at first all but the last do: what follows it differs). Until the last
// settled symbol x merges with its right neighbour, the settled symbols change by their own
// merges alone, in the same order in both (each the lowest of their own pairs, whatever happens
// to the right). In the whole word x's right neighbour is the symbol the frontier stopped at,
// perhaps grown: a token beginning with that symbol's text. x is right of every settled pair, so
// that merge comes before a settled merge of rank r only if its rank is below r. So before each
// settled merge (and at the end, before any later merge) the frontier moves left past x while x
// has such a merge below that rank, and past x when the window merges x with an unsettled
// symbol. No merge then crosses the final frontier in the whole word: the settled symbols are
// its final ones, and the rest of the word encodes as a word of its own.
size_t Bpe::merge_settled(std::string_view word, size_t window, BpeCache& scratch, std::vector<int32_t>& out) const {
    scratch.ids.clear();
    scratch.starts.clear();
    initial_symbols(word.substr(0, window), scratch.ids, scratch.starts);
    const auto& ids = scratch.ids;
    if (ids.empty()) return window;  // every character dropped, whatever follows
    Frontier frontier{word, static_cast<int32_t>(ids.size() - 1), ids.back()};
    run_merges(scratch, &frontier);
    for (int32_t i = 0; i != frontier.first; i = scratch.next[static_cast<size_t>(i)]) out.push_back(ids[static_cast<size_t>(i)]);
    return scratch.starts[static_cast<size_t>(frontier.first)];
}

void Bpe::encode_long_word(std::string_view word, BpeCache& scratch, std::vector<int32_t>& out) const {
    size_t window = scratch.window_bytes;
    while (word.size() > window) {
        size_t cut = window;
        while (cut > 0 && (static_cast<unsigned char>(word[cut]) & 0xC0) == 0x80) --cut;  // a character boundary
        const size_t settled = merge_settled(word, cut, scratch, out);
        if (settled == 0) {
            window *= 2;  // nothing settled yet: a wider window (the whole word at worst)
            continue;
        }
        word.remove_prefix(settled);
        window = scratch.window_bytes;
    }
    merge(word, scratch, out);
}

void Bpe::index_right_merges(const std::vector<std::pair<int32_t, int32_t>>& pairs) {
    // A pair listed again later keeps only its last rank, so the earlier one never applies.
    const auto applies = [&](size_t rank) {
        return merges_.find(pairs[rank].first, pairs[rank].second)->rank == static_cast<int32_t>(rank);
    };
    std::vector<uint32_t> start(id_to_token_.size() + 1, 0);
    for (size_t rank = 0; rank < pairs.size(); ++rank)
        if (applies(rank)) ++start[static_cast<size_t>(pairs[rank].first) + 1];
    for (size_t t = 0; t < id_to_token_.size(); ++t) start[t + 1] += start[t];
    right_merges_.resize(start.back());
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (size_t rank = 0; rank < pairs.size(); ++rank)
        if (applies(rank)) right_merges_[fill[static_cast<size_t>(pairs[rank].first)]++] = {static_cast<int32_t>(rank), pairs[rank].second};
    right_merge_start_ = std::move(start);
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
    else if (word.size() > cache.window_bytes)
        encode_long_word(word, cache, out);
    else
        merge(word, cache, out);
    if (!cacheable) return;
    if (cache.words.size() >= kCacheLimit) cache.words.clear();
    cache.words.emplace(std::string(word), std::vector<int32_t>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
}

}  // namespace stormo::text
