#include "serve/prepare_request.hpp"

#include <string>

namespace stormo::serve {
namespace {

// Values share their lists and objects when copied, so these build new ones instead of editing.
text::Value with_member(const text::Value& object, const std::string& key, text::Value value) {
    text::Value out = text::Value::object(object.as_object());
    out.set(key, std::move(value));
    return out;
}

text::Value template_tool_call(const text::Value& call) {
    const text::Value* function = call.is_object() ? call.find("function") : nullptr;
    const text::Value* arguments = function && function->is_object() ? function->find("arguments") : nullptr;
    if (!arguments || !arguments->is_string()) return call;
    auto parsed = text::parse_json_value(arguments->as_string(), "tool call arguments");
    if (!parsed || !parsed->is_object()) return call;
    return with_member(call, "function", with_member(*function, "arguments", std::move(*parsed)));
}

text::Value template_message(const text::Value& m) {
    const text::Value* role = m.find("role");
    if (!role || !role->is_string() || role->as_string() != "assistant") return m;
    text::Value out = m;
    const text::Value* reasoning = m.find("reasoning_content");
    if (reasoning && reasoning->is_string() && !m.find("thinking")) out = with_member(out, "thinking", *reasoning);
    if (const text::Value* calls = m.find("tool_calls"); calls && calls->is_list()) {
        text::ValueList converted;
        for (const text::Value& call : calls->as_list()) converted.push_back(template_tool_call(call));
        out = with_member(out, "tool_calls", text::Value::list(std::move(converted)));
    }
    return out;
}

// Messages as the model templates read them. A client sends an assistant turn's reasoning as
// reasoning_content (what Qwen3's template reads); gpt-oss's template reads `thinking`, so both are
// given. OpenAI sends tool-call arguments as JSON text; the templates print them with tojson, so a
// text that holds a JSON object is given as that object (else it stays text).
text::Value template_messages(const text::Value& messages) {
    text::ValueList out;
    for (const text::Value& m : messages.as_list()) out.push_back(template_message(m));
    return text::Value::list(std::move(out));
}

ApiError context_exceeded(size_t context, const std::string& prompt_size, const char* param) {
    return bad_request("This model's maximum context length is " + std::to_string(context) + " tokens; the prompt is " +
                           prompt_size + ", which leaves no room for an answer",
                       param, "context_length_exceeded")
        .value();
}

ApiExpected<std::vector<int32_t>> prompt_ids(const CompletionRequest& request, const PromptText& text, size_t context) {
    const char* param = request.endpoint == Endpoint::chat ? "messages" : "prompt";
    std::string rendered;
    std::string_view prompt = request.prompt;
    if (request.endpoint == Endpoint::chat) {
        text::Value options = request.template_options;
        options.set("add_generation_prompt", text::Value(true));
        auto r = text.chat_template->render(template_messages(request.messages), options);
        if (!r) return bad_request("the chat template refused the messages: " + r.error().message, "messages");
        rendered = std::move(*r);
        prompt = rendered;
    }
    if (const auto per_token = text.max_bytes_per_token; per_token && context > 0 && prompt.size() > (context - 1) * *per_token) {
        const size_t at_least = (prompt.size() + *per_token - 1) / *per_token;
        return tl::unexpected(context_exceeded(context,
                                               std::to_string(prompt.size()) + " bytes, at least " + std::to_string(at_least) +
                                                   " tokens (a token stands for at most " + std::to_string(*per_token) +
                                                   " bytes)",
                                               param));
    }
    // The rendered text carries the template's special tokens as text: they are matched as such.
    std::vector<int32_t> ids = text.tokenizer->encode(prompt, /*match_special=*/true);
    if (ids.empty()) return bad_request("the prompt encodes to no tokens", param);
    return ids;
}

}  // namespace

ApiExpected<PreparedRequest> prepare_request(const CompletionRequest& request, const PromptText& text, size_t context) {
    if (auto valid = validate(request.sampling); !valid) return bad_request(valid.error().message);
    auto ids = prompt_ids(request, text, context);
    if (!ids) return tl::unexpected(ids.error());
    const size_t prompt = ids->size();
    const char* param = request.endpoint == Endpoint::chat ? "messages" : "prompt";
    if (prompt >= context) return tl::unexpected(context_exceeded(context, std::to_string(prompt) + " tokens", param));
    PreparedRequest out;
    out.endpoint = request.endpoint;
    out.sampling = request.sampling;
    out.stop = request.stop;
    out.ignore_eos = request.ignore_eos;
    out.grammar = request.grammar;
    out.top_logprobs = request.top_logprobs;
    out.speculate = request.speculate;
    out.draft_max = request.draft_max;
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
