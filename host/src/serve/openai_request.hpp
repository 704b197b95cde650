#pragma once
// The bodies of the OpenAI routes (and llama-server's /tokenize and /detokenize) read into plain
// structs, every field checked for its type and range. A refusal names the field (`param`), so a
// bad request gets its 400 before it is queued or touches the session.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "constrain/grammar.hpp"
#include "jinja/chat_value.hpp"
#include "runtime/sampler.hpp"
#include "runtime/speculation.hpp"
#include "serve/api_error.hpp"

namespace stormo::serve {

enum class Endpoint { chat, completion };

struct CompletionRequest {
    Endpoint endpoint = Endpoint::chat;
    text::Value messages = text::Value::list();  // chat: the messages, content made plain text
    std::string prompt;                          // completion: the prompt text
    bool stream = false;
    bool include_usage = false;           // stream_options.include_usage
    std::optional<int64_t> max_tokens;    // max_completion_tokens or max_tokens; absent: what the context leaves
    SamplingParams sampling;
    std::vector<std::string> stop;        // stop sequences on the answer's text
    // The chat template's variables: chat_template_kwargs' members, reasoning_effort, tools.
    text::Value template_options = text::Value::object();
    bool ignore_eos = false;              // llama-server's extension: generate past the model's stop ids
    // Structured output (response_format, grammar, json_schema): the grammar the answer matches.
    std::shared_ptr<const constrain::Grammar> grammar;
    // logprobs: how many alternatives each token lists (chat: top_logprobs with logprobs true;
    // completions: logprobs N); nullopt: no logprobs.
    std::optional<size_t> top_logprobs;
    // Speculative decoding for this request (speculate, draft_max); absent: the server's.
    std::optional<SpeculateMode> speculate;
    std::optional<size_t> draft_max;
};

// Largest max_tokens accepted before the context check (which names the context).
inline constexpr int64_t kMaxTokensCap = int64_t{1} << 24;
// At most this many stop sequences, each at most kMaxStopBytes.
inline constexpr size_t kMaxStops = 16;
inline constexpr size_t kMaxStopBytes = 256;
// The most alternatives a token's logprobs list (OpenAI's top_logprobs limit).
inline constexpr int64_t kMaxTopLogprobs = 20;

ApiExpected<CompletionRequest> parse_chat_request(std::string_view body);
ApiExpected<CompletionRequest> parse_completion_request(std::string_view body);

struct TokenizeRequest {
    std::string content;
    bool add_special = false;  // the text of special tokens is matched as special tokens
};
ApiExpected<TokenizeRequest> parse_tokenize_request(std::string_view body);

struct DetokenizeRequest {
    std::vector<int32_t> tokens;
};
ApiExpected<DetokenizeRequest> parse_detokenize_request(std::string_view body);

}  // namespace stormo::serve
