#pragma once
// The JSON the OpenAI routes answer with: whole completions, streamed chunks, usage, the model
// list. Plain functions from values to JSON text; the connection decides how to send them.
#include <cstdint>
#include <string>
#include <vector>

#include "reply/reply_parser.hpp"
#include "serve/job.hpp"

namespace stormo::serve {

// What every object of one response shares.
struct ResponseIdentity {
    std::string id;     // "chatcmpl-..." or "cmpl-..."
    int64_t created = 0;  // seconds since the epoch
    std::string model;
};

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}
text::Value usage_value(size_t prompt_tokens, size_t completion_tokens, size_t cached_tokens);
// OpenAI's tool_calls entries: {"id", "type": "function", "function": {"name", "arguments": "<json text>"}}.
text::Value tool_calls_value(const std::vector<text::ToolCall>& calls, const std::string& id_prefix);

// POST /v1/chat/completions without streaming: object "chat.completion".
std::string chat_completion_json(const ResponseIdentity& who, const JobResult& result);
// POST /v1/completions without streaming: object "text_completion".
std::string text_completion_json(const ResponseIdentity& who, const JobResult& result);

// Streamed chat chunks (object "chat.completion.chunk").
std::string chat_role_chunk(const ResponseIdentity& who);  // the first: delta {"role": "assistant", "content": ""}
std::string chat_piece_chunk(const ResponseIdentity& who, const text::ReplyPiece& piece);  // content or reasoning_content
std::string chat_tool_calls_chunk(const ResponseIdentity& who, const std::vector<text::ToolCall>& calls);
std::string chat_finish_chunk(const ResponseIdentity& who, FinishReason finish);
// The usage chunk (stream_options.include_usage): empty choices and usage.
std::string chat_usage_chunk(const ResponseIdentity& who, const JobResult& result);
// Streamed text completions (object "text_completion").
std::string text_piece_chunk(const ResponseIdentity& who, const std::string& text);
std::string text_finish_chunk(const ResponseIdentity& who, FinishReason finish);
std::string text_usage_chunk(const ResponseIdentity& who, const JobResult& result);

// GET /v1/models: the one model served.
std::string models_json(const std::string& model, int64_t created);

}  // namespace stormo::serve
