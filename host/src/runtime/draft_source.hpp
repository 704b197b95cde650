#pragma once
// Where a speculative step's drafts come from (docs/speculation.md). A source proposes the tokens
// it expects to follow the sequence; the verify step checks them all in one pass and keeps the
// longest prefix plain decoding would have produced, so a source changes the speed, never the
// tokens. One source per sequence and speculation mode: the context (prompt lookup), a grammar's
// forced tokens, a replay of recorded tokens (tests, `bench --draft-replay-acceptance`), the
// model's multi-token-prediction layer (mtp_draft_source.hpp).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/token_constraint.hpp"

namespace stormo {

class SpeculationGate;

struct DraftContext {
    // Every token of the sequence so far: the session's and the one chosen last, which the step
    // consumes first (the drafts continue after it).
    std::span<const int32_t> tokens;
    // Tokens generated so far by this request (the last one included).
    size_t generated = 0;
    // The request's constraint, or null. Its state is after the last token chosen.
    TokenConstraint* constraint = nullptr;
    // For a source that wants_hidden(): the main model's final-normed row of the position that
    // chose the last token (empty before the first verified step). The MTP head's input.
    std::span<const float> last_hidden;
    // auto: the gate of the request, whose per-source acceptance a source choosing among others
    // consults (null otherwise).
    const SpeculationGate* gate = nullptr;
};

class DraftSource {
public:
    virtual ~DraftSource() = default;
    // Names the source in the statistics ("context", "grammar", "replay", "mtp").
    virtual std::string_view name() const = 0;
    // At most `limit` tokens expected to follow ctx.tokens; empty when the source has nothing.
    virtual std::vector<int32_t> propose(const DraftContext& ctx, size_t limit) = 0;
    // Whether every step must hand back its final-normed rows (DraftContext::last_hidden,
    // observe_hidden).
    virtual bool wants_hidden() const { return false; }
    // For a source that wants_hidden(): the main model's final-normed rows of the positions
    // [first_position, first_position + rows) a step committed (a prompt's rows, a verify
    // step's kept rows), in order; a position at or below one handed before replaces it.
    virtual void observe_hidden(size_t /*first_position*/, std::span<const float> /*rows*/) {}
};

}  // namespace stormo
