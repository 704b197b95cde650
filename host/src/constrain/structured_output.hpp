#pragma once
// Structured output as generation sees it: the grammar constrains the answer, and only the
// answer. What a reply format puts around it stays free: Harmony's analysis and commentary
// messages and their headers (the grammar starts at the body of the `final` channel), Qwen3's
// <think> block and the newlines after it. Ending the reply is allowed only where the grammar
// accepts (or, outside the answer, after a tool call's body: a tool call is a whole reply), so a
// reply that ends on a stop id holds an answer that parses.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "constrain/grammar_constraint.hpp"
#include "reply/reply_parser.hpp"
#include "runtime/token_constraint.hpp"

namespace stormo::constrain {

// The special tokens of a reply format, by id.
struct ReplyMarkers {
    text::ReplyFormat format = text::ReplyFormat::plain;
    std::optional<int32_t> start, channel, message, end, constrain;  // Harmony
    std::optional<int32_t> think, think_end;                         // think tags
    static ReplyMarkers of(const text::Tokenizer& tokenizer, text::ReplyFormat format);
};

class StructuredOutput final : public TokenConstraint {
public:
    // `stop_ids`: the ids that end generation (none when the request ignores them: the answer
    // then ends as soon as the grammar can take nothing more).
    StructuredOutput(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocabulary,
                     ReplyMarkers markers, std::vector<int32_t> stop_ids);

    Expected<void> mask(std::span<float> logits) override;
    Expected<void> accept(int32_t token) override;
    bool complete() const override;
    std::vector<int32_t> forced_tokens(size_t limit) override;

    // Whether the next token belongs to the answer (the grammar decides it).
    bool in_answer() const { return phase_ == Phase::answer || phase_ == Phase::before_answer; }

private:
    enum class Phase {
        before_answer,  // think tags: <think>, newlines or the answer's first token
        answer,         // the grammar's
        header,         // Harmony: a message's header (role, channel, recipient)
        free_body,      // Harmony: an analysis or commentary message; think tags: the reasoning
        done,           // the answer ended with an end token
    };
    bool is_stop(int32_t id) const;
    void allow(std::vector<bool>& keep, std::optional<int32_t> id) const;

    GrammarConstraint grammar_;
    ReplyMarkers markers_;
    std::vector<int32_t> stop_ids_;
    Phase phase_ = Phase::answer;
    std::string header_;       // Harmony: the current header's text
    bool tool_call_ = false;   // Harmony: the current body is addressed to a tool
    std::vector<bool> keep_;   // scratch for mask()
};

}  // namespace stormo::constrain
