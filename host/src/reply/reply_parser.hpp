#pragma once
// A model's generated tokens read back as a chat reply: reasoning, the answer, tool calls. The
// format follows the prompt format the tokenizer speaks: Harmony (gpt-oss: messages on channels
// analysis, commentary and final, tool calls addressed `to=functions.NAME` and ended by <|call|>),
// think tags (Qwen3: <think>...</think>, then the answer, tool calls as <tool_call>{json}</tool_call>),
// or plain (everything is the answer: the demo models).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/chat_value.hpp"
#include "stormo/error.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::text {

enum class ReplyFormat { plain, harmony, think_tags };
const char* reply_format_name(ReplyFormat format);
// Harmony when the vocabulary has its <|channel|> and <|message|> tokens, think tags when it has
// <think> and </think>, else plain.
ReplyFormat detect_reply_format(const Tokenizer& tokenizer);

// The word after `marker` in a Harmony header ("<|channel|>analysis", "to=functions.get_weather"),
// empty when the marker is absent.
std::string header_word(const std::string& header, std::string_view marker);

struct ToolCall {
    std::string name;
    Value arguments;  // the JSON object the model wrote, or its text when it is not JSON
};

struct Reply {
    std::string reasoning;
    std::string content;
    std::vector<ToolCall> tool_calls;
    // The reply as the next turn's template expects it in `messages` (Harmony's `thinking`, Qwen3's
    // `reasoning_content`, `tool_calls` as {"type": "function", "function": {name, arguments}}).
    Value as_message(ReplyFormat format) const;
};

// A piece of text that became complete with the last token: part of the reasoning or of the answer.
struct ReplyPiece {
    enum class Kind { reasoning, content };
    Kind kind = Kind::content;
    std::string text;
};

// Reads the generated ids one by one (the reply starts right after the generation prompt).
// Special tokens structure the reply and are never part of its text.
class ReplyParser {
public:
    ReplyParser(const Tokenizer& tokenizer, ReplyFormat format);
    // The text pieces this id completes (none while a header or a tool call is being read).
    Expected<std::vector<ReplyPiece>> push(int32_t id);
    // Ends the reply (a stop id, the token limit or a cancel): flushes held-back text and a tool
    // call left open.
    std::vector<ReplyPiece> finish();
    const Reply& reply() const { return reply_; }

private:
    enum class Part { header, reasoning, content, tool_call, ignored };
    struct Specials {
        std::optional<int32_t> start, channel, message, end, ret, call, constrain;  // Harmony
        std::optional<int32_t> think, think_end, tool_call, tool_call_end;  // think tags
    };
    Expected<std::vector<ReplyPiece>> push_harmony(int32_t id);
    Expected<std::vector<ReplyPiece>> push_think_tags(int32_t id);
    Expected<std::vector<ReplyPiece>> text_of(int32_t id);
    void open_harmony_body();
    void close_part();
    std::vector<ReplyPiece> emit(std::string text);

    ReplyFormat format_;
    Specials specials_;
    Part part_ = Part::content;
    StreamDecoder decoder_;
    std::string header_;     // a Harmony message's header so far
    std::string recipient_;  // its `to=` recipient
    std::string tool_text_;  // the body of the tool call being read
    bool content_started_ = false;  // think tags: the newlines after </think> are not the answer's
    Reply reply_;
};

}  // namespace stormo::text
