#pragma once
// The JSON the OpenAI routes answer with: whole completions, streamed chunks, usage, the model
// list. Plain functions from values to JSON text; the connection decides how to send them.
#include <cstdint>
#include <span>
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

// A chat choice's logprobs: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}], "refusal": null}.
text::Value chat_logprobs_value(std::span<const LogprobEntry> entries);
// A text completion choice's logprobs: {"tokens", "token_logprobs", "top_logprobs", "text_offset"};
// `offset` is the first token's byte offset in the answer's text, and is advanced past the entries.
text::Value text_logprobs_value(std::span<const LogprobEntry> entries, size_t& offset);

// POST /v1/chat/completions without streaming: object "chat.completion"; `logprobs`: the request
// asked for them (result.logprobs), else the choice's logprobs are null.
std::string chat_completion_json(const ResponseIdentity& who, const JobResult& result, bool logprobs = false);
// POST /v1/completions without streaming: object "text_completion".
std::string text_completion_json(const ResponseIdentity& who, const JobResult& result, bool logprobs = false);

// Streamed chat chunks (object "chat.completion.chunk"). `logprobs`: the choice's (null, or what
// chat_logprobs_value makes of the tokens since the last chunk).
std::string chat_role_chunk(const ResponseIdentity& who);  // the first: delta {"role": "assistant", "content": ""}
std::string chat_piece_chunk(const ResponseIdentity& who, const text::ReplyPiece& piece,  // content or reasoning_content
                             const text::Value& logprobs = text::Value());
std::string chat_tool_calls_chunk(const ResponseIdentity& who, const std::vector<text::ToolCall>& calls);
std::string chat_finish_chunk(const ResponseIdentity& who, FinishReason finish, const text::Value& logprobs = text::Value());
// The usage chunk (stream_options.include_usage): empty choices and usage.
std::string chat_usage_chunk(const ResponseIdentity& who, const JobResult& result);
// Streamed text completions (object "text_completion").
std::string text_piece_chunk(const ResponseIdentity& who, const std::string& text, const text::Value& logprobs = text::Value());
std::string text_finish_chunk(const ResponseIdentity& who, FinishReason finish, const text::Value& logprobs = text::Value());
std::string text_usage_chunk(const ResponseIdentity& who, const JobResult& result);

// GET /v1/models: the one model served.
std::string models_json(const std::string& model, int64_t created);
// GET /v1/models/{id}: the model object alone.
std::string model_json(const std::string& model, int64_t created);

}  // namespace stormo::serve
