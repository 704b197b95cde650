#pragma once
// A parsed completion request made ready for the worker on the connection's thread: the messages
// rendered with the model's chat template (or the prompt text), encoded to ids, and checked
// against the context, so a request that cannot run is refused before it is queued.
#include <cstddef>

#include "serve/api_error.hpp"
#include "serve/job.hpp"
#include "serve/openai_request.hpp"
#include "text/chat_template.hpp"
#include "text/tokenizer.hpp"

namespace stormo::serve {

struct PromptText {
    const text::Tokenizer* tokenizer = nullptr;
    const text::ChatTemplate* chat_template = nullptr;
};

// context: the session's capacity in positions. A prompt that leaves no room for one token, or
// an explicit max_tokens past what the context leaves, is a 400 with code context_length_exceeded.
ApiExpected<PreparedRequest> prepare_request(const CompletionRequest& request, const PromptText& text, size_t context);

}  // namespace stormo::serve
