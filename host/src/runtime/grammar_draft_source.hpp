#pragma once
// Free drafts from structured output: where the constraint admits one continuation only (a JSON
// schema's keys and punctuation, a grammar's literal), those tokens are the drafts; they are
// always accepted unless the constraint's forced tokens and the model's masked choice differ,
// which they cannot (the mask allows nothing else).
#include "runtime/draft_source.hpp"

namespace stormo {

class GrammarDraftSource final : public DraftSource {
public:
    std::string_view name() const override { return "grammar"; }
    std::vector<int32_t> propose(const DraftContext& ctx, size_t limit) override {
        if (ctx.constraint == nullptr || limit == 0 || ctx.constraint->complete()) return {};
        return ctx.constraint->forced_tokens(limit);
    }
    bool certain() const override { return true; }
};

}  // namespace stormo
