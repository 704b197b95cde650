#pragma once
// Free drafts from structured output: where the constraint admits one continuation only (a JSON
// schema's keys and punctuation, a grammar's literal), its tokens for those bytes are the drafts.
// They cost nothing to make but are not certain: the mask also admits other spellings of the
// same bytes (shorter tokens), which the model may prefer; the verify step decides, and the gate
// measures this source's acceptance like any other's.
#include "runtime/draft_source.hpp"

namespace stormo {

class GrammarDraftSource final : public DraftSource {
public:
    std::string_view name() const override { return "grammar"; }
    std::vector<int32_t> propose(const DraftContext& ctx, size_t limit) override {
        if (ctx.constraint == nullptr || limit == 0 || ctx.constraint->complete()) return {};
        return ctx.constraint->forced_tokens(limit);
    }
};

}  // namespace stormo
