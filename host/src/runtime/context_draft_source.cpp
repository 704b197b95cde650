#include "runtime/context_draft_source.hpp"

#include <algorithm>

namespace stormo {

std::vector<int32_t> lookup_continuation(std::span<const int32_t> tokens, size_t limit, size_t min_ngram, size_t max_ngram) {
    const size_t n = tokens.size();
    if (limit == 0 || min_ngram == 0 || n < min_ngram + 1) return {};
    for (size_t len = std::min(max_ngram, n - 1); len >= min_ngram; --len) {
        const std::span<const int32_t> suffix = tokens.subspan(n - len);
        // The most recent earlier occurrence: its start s < n - len, and at least one token after it.
        for (size_t s = n - len; s-- > 0;) {
            if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + static_cast<ptrdiff_t>(s))) continue;
            const size_t from = s + len;
            const size_t count = std::min(limit, n - from);
            return std::vector<int32_t>(tokens.begin() + static_cast<ptrdiff_t>(from),
                                        tokens.begin() + static_cast<ptrdiff_t>(from + count));
        }
        if (len == min_ngram) break;
    }
    return {};
}

std::vector<int32_t> ContextDraftSource::propose(const DraftContext& ctx, size_t limit) {
    return lookup_continuation(ctx.tokens, limit, min_ngram_, max_ngram_);
}

}  // namespace stormo
