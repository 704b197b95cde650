#include "runtime/context_draft_source.hpp"

#include <algorithm>

namespace stormo {

std::vector<int32_t> lookup_continuation(std::span<const int32_t> tokens, size_t limit, size_t min_ngram, size_t max_ngram) {
    const size_t n = tokens.size();
    if (limit == 0 || min_ngram == 0 || n < min_ngram + 1) return {};
    // One pass over the earlier ends e (an occurrence ending at e has a token after it): how many
    // tokens up to e match the sequence's last ones, at most `cap`. The longest match wins, the
    // most recent among equals: the same answer as looking each suffix length up in turn, in
    // one compare per position where the last token does not recur (a step's lookup was a tenth of
    // a demo's decode step).
    const size_t cap = std::min(max_ngram, n - 1);
    const int32_t last = tokens[n - 1];
    size_t best = 0, best_end = 0;
    for (size_t e = n - 1; e-- > 0 && best < cap;) {
        if (tokens[e] != last) continue;
        size_t m = 1;
        while (m < cap && m <= e && tokens[e - m] == tokens[n - 1 - m]) ++m;
        if (m > best) {
            best = m;
            best_end = e;
        }
    }
    if (best < min_ngram) return {};
    const size_t from = best_end + 1;
    const size_t count = std::min(limit, n - from);
    return std::vector<int32_t>(tokens.begin() + static_cast<ptrdiff_t>(from), tokens.begin() + static_cast<ptrdiff_t>(from + count));
}

std::vector<int32_t> ContextDraftSource::propose(const DraftContext& ctx, size_t limit) {
    return lookup_continuation(ctx.tokens, limit, min_ngram_, max_ngram_);
}

}  // namespace stormo
