#pragma once
// A parsed completion request made ready for the worker on the connection's thread: the messages
// rendered with the model's chat template (or the prompt text), encoded to ids, and checked
// against the context, so a request that cannot run is refused before it is queued.
#include <cstddef>
#include <optional>

#include "jinja/chat_template.hpp"
#include "serve/api_error.hpp"
#include "serve/job.hpp"
#include "serve/openai_request.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::serve {

struct PromptText {
    const text::Tokenizer* tokenizer = nullptr;
    const text::ChatTemplate* chat_template = nullptr;
    // The most bytes of text one token stands for (Tokenizer::max_bytes_per_token), when bounded.
    std::optional<size_t> max_bytes_per_token;
};

// context: the session's capacity in positions. A prompt that leaves no room for one token, or
// an explicit max_tokens past what the context leaves, is a 400 with code context_length_exceeded.
// A prompt text longer than (context - 1) tokens of max_bytes_per_token bytes each is at least
// `context` tokens whatever they are: it is refused by its length, without being encoded.
ApiExpected<PreparedRequest> prepare_request(const CompletionRequest& request, const PromptText& text, size_t context);

}  // namespace stormo::serve
