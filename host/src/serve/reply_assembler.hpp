#pragma once
// Generated ids made into what a response carries: pieces of reasoning and answer as they complete
// (the reply parser for chats: Harmony channels, think tags or plain; the plain decoder for text
// completions, special tokens dropped), the stop sequences applied to the answer, and at the end
// the whole answer, reasoning and tool calls.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reply/reply_parser.hpp"
#include "serve/openai_request.hpp"
#include "serve/stop_sequences.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::serve {

class ReplyAssembler {
public:
    ReplyAssembler(const text::Tokenizer& tokenizer, text::ReplyFormat format, Endpoint endpoint,
                   std::vector<std::string> stops);

    // The pieces this id completes, ready to send (none past a stop sequence). An id the
    // tokenizer cannot decode is an error.
    Expected<std::vector<text::ReplyPiece>> push(int32_t id);
    // The end of generation: text held back (an unfinished character, the start of a stop
    // sequence that never completed) and a tool call left open.
    std::vector<text::ReplyPiece> finish();
    // A stop sequence completed: generation should end.
    bool stopped() const { return stops_.matched(); }

    const std::string& content() const { return content_; }    // as sent
    const std::string& reasoning() const { return reasoning_; }
    std::vector<text::ToolCall> tool_calls() const;

private:
    void deliver(text::ReplyPiece piece, std::vector<text::ReplyPiece>& out);

    text::StreamDecoder decoder_;
    std::optional<text::ReplyParser> parser_;  // chats only
    StopMatcher stops_;
    std::string content_;
    std::string reasoning_;
};

}  // namespace stormo::serve
