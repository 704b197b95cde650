#include "serve/prepare_request.hpp"

#include <string>

namespace stormo::serve {
namespace {

ApiExpected<std::vector<int32_t>> prompt_ids(const CompletionRequest& request, const PromptText& text) {
    std::string prompt = request.prompt;
    if (request.endpoint == Endpoint::chat) {
        text::Value options = request.template_options;
        options.set("add_generation_prompt", text::Value(true));
        auto rendered = text.chat_template->render(request.messages, options);
        if (!rendered) return bad_request("the chat template refused the messages: " + rendered.error().message, "messages");
        prompt = std::move(*rendered);
    }
    // The rendered text carries the template's special tokens as text: they are matched as such.
    std::vector<int32_t> ids = text.tokenizer->encode(prompt, /*match_special=*/true);
    const char* param = request.endpoint == Endpoint::chat ? "messages" : "prompt";
    if (ids.empty()) return bad_request("the prompt encodes to no tokens", param);
    return ids;
}

}  // namespace

ApiExpected<PreparedRequest> prepare_request(const CompletionRequest& request, const PromptText& text, size_t context) {
    if (auto valid = validate(request.sampling); !valid) return bad_request(valid.error().message);
    auto ids = prompt_ids(request, text);
    if (!ids) return tl::unexpected(ids.error());
    const size_t prompt = ids->size();
    const char* param = request.endpoint == Endpoint::chat ? "messages" : "prompt";
    if (prompt >= context)
        return bad_request("This model's maximum context length is " + std::to_string(context) + " tokens; the prompt is " +
                               std::to_string(prompt) + " tokens, which leaves no room for an answer",
                           param, "context_length_exceeded");
    PreparedRequest out;
    out.endpoint = request.endpoint;
    out.sampling = request.sampling;
    out.stop = request.stop;
    out.ignore_eos = request.ignore_eos;
    if (request.max_tokens) {
        const size_t wanted = static_cast<size_t>(*request.max_tokens);
        if (prompt + wanted > context)
            return bad_request("This model's maximum context length is " + std::to_string(context) + " tokens; " +
                                   std::to_string(prompt) + " in the prompt and " + std::to_string(wanted) +
                                   " asked for the answer do not fit (ask for at most " + std::to_string(context - prompt) +
                                   ")",
                               "max_tokens", "context_length_exceeded");
        out.max_tokens = wanted;
    } else {
        out.max_tokens = context - prompt;
    }
    out.prompt = std::move(*ids);
    return out;
}

}  // namespace stormo::serve
