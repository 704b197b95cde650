#include "constrain/structured_output.hpp"

#include <algorithm>
#include <limits>

namespace stormo::constrain {

ReplyMarkers ReplyMarkers::of(const text::Tokenizer& tokenizer, text::ReplyFormat format) {
    ReplyMarkers m;
    m.format = format;
    auto id = [&](const char* token) { return tokenizer.token_id(token); };
    if (format == text::ReplyFormat::harmony) {
        m.start = id("<|start|>");
        m.channel = id("<|channel|>");
        m.message = id("<|message|>");
        m.end = id("<|end|>");
        m.constrain = id("<|constrain|>");
    } else if (format == text::ReplyFormat::think_tags) {
        m.think = id("<think>");
        m.think_end = id("</think>");
    }
    return m;
}

StructuredOutput::StructuredOutput(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocabulary,
                                   ReplyMarkers markers, std::vector<int32_t> stop_ids)
    : grammar_(std::move(grammar), std::move(vocabulary)), markers_(markers), stop_ids_(std::move(stop_ids)) {
    switch (markers_.format) {
        case text::ReplyFormat::plain: phase_ = Phase::answer; break;
        // The generation prompt ends inside a header (`<|start|>assistant`).
        case text::ReplyFormat::harmony: phase_ = Phase::header; break;
        case text::ReplyFormat::think_tags: phase_ = Phase::before_answer; break;
    }
}

bool StructuredOutput::is_stop(int32_t id) const { return std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end(); }

void StructuredOutput::allow(std::vector<bool>& keep, std::optional<int32_t> id) const {
    if (id && *id >= 0 && static_cast<size_t>(*id) < keep.size()) keep[static_cast<size_t>(*id)] = true;
}

Expected<void> StructuredOutput::mask(std::span<float> logits) {
    constexpr float kNever = -std::numeric_limits<float>::infinity();
    if (phase_ == Phase::header || phase_ == Phase::free_body) {
        // Outside the answer the model is free, but may not end the reply there (a tool call's
        // body excepted).
        if (!(phase_ == Phase::free_body && tool_call_))
            for (int32_t id : stop_ids_)
                if (id >= 0 && static_cast<size_t>(id) < logits.size()) logits[static_cast<size_t>(id)] = kNever;
        return {};
    }
    keep_.assign(logits.size(), false);
    if (phase_ != Phase::done) {
        const std::vector<uint64_t>& bits = grammar_.allowed();
        const size_t n = std::min(logits.size(), grammar_.vocabulary().vocab_size());
        for (size_t i = 0; i < n; ++i)
            if (GrammarConstraint::test(bits, static_cast<int32_t>(i))) keep_[i] = true;
    }
    if (grammar_.accepts() || phase_ == Phase::done) {
        for (int32_t id : stop_ids_) allow(keep_, id);
        if (markers_.format == text::ReplyFormat::harmony) allow(keep_, markers_.end);
    }
    if (phase_ == Phase::before_answer && !grammar_.started()) {
        allow(keep_, markers_.think);
        for (int32_t id : grammar_.vocabulary().newline_tokens()) allow(keep_, id);
    }
    bool any = false;
    for (size_t i = 0; i < logits.size(); ++i) {
        if (!keep_[i]) logits[i] = kNever;
        else any = any || logits[i] != kNever;
    }
    if (!any)
        return fail(ErrorKind::invalid_argument,
                    "structured output: no token of this model's vocabulary can continue the answer here");
    return {};
}

Expected<void> StructuredOutput::accept(int32_t token) {
    switch (phase_) {
        case Phase::done: return {};
        case Phase::header:
            if (token == markers_.message) {
                const bool final_channel = text::header_word(header_, "<|channel|>") == "final";
                tool_call_ = !text::header_word(header_, "to=").empty();
                phase_ = final_channel && !tool_call_ ? Phase::answer : Phase::free_body;
            } else if (token == markers_.start) {
                header_.clear();
            } else if (token == markers_.channel) {
                header_ += "<|channel|>";
            } else if (token == markers_.constrain) {
                header_ += "<|constrain|>";
            } else {
                header_ += grammar_.vocabulary().bytes(token);
            }
            return {};
        case Phase::free_body:
            if (token == markers_.think_end) {
                phase_ = Phase::before_answer;
            } else if (token == markers_.start) {
                phase_ = Phase::header;
                header_.clear();
                tool_call_ = false;
            }
            return {};
        case Phase::before_answer:
            if (token == markers_.think) {
                phase_ = Phase::free_body;
                return {};
            }
            if (!grammar_.started() &&
                std::ranges::find(grammar_.vocabulary().newline_tokens(), token) != grammar_.vocabulary().newline_tokens().end())
                return {};
            phase_ = Phase::answer;
            break;
        case Phase::answer: break;
    }
    if (is_stop(token) || (markers_.format == text::ReplyFormat::harmony && token == markers_.end)) {
        phase_ = Phase::done;
        return {};
    }
    return grammar_.accept(token);
}

bool StructuredOutput::complete() const {
    if (phase_ == Phase::done) return true;
    // Nothing can follow and no stop id may say so: the answer ends by itself.
    return phase_ == Phase::answer && stop_ids_.empty() && grammar_.accepts() && !grammar_.can_continue();
}

std::vector<int32_t> StructuredOutput::forced_tokens(size_t limit) {
    if (phase_ != Phase::answer && !(phase_ == Phase::before_answer && grammar_.started())) return {};
    return grammar_.forced_tokens(limit);
}

}  // namespace stormo::constrain
