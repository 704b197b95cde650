#pragma once
// Prompt lookup: drafts copied from the sequence's own tokens. The longest suffix of the sequence
// (down to a minimum n-gram length) that occurred before, at its most recent occurrence, proposes
// the tokens that followed it there. No state beyond the token list; every family.
#include "runtime/draft_source.hpp"

namespace stormo {

class ContextDraftSource final : public DraftSource {
public:
    // Suffixes of min_ngram..max_ngram tokens are looked up, the longest first.
    explicit ContextDraftSource(size_t min_ngram = 2, size_t max_ngram = 8) : min_ngram_(min_ngram), max_ngram_(max_ngram) {}
    std::string_view name() const override { return "context"; }
    std::vector<int32_t> propose(const DraftContext& ctx, size_t limit) override;

private:
    size_t min_ngram_;
    size_t max_ngram_;
};

// The continuation prompt lookup proposes for `tokens` (the function behind ContextDraftSource).
std::vector<int32_t> lookup_continuation(std::span<const int32_t> tokens, size_t limit, size_t min_ngram, size_t max_ngram);

}  // namespace stormo
