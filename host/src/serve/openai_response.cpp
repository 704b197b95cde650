#include "serve/openai_response.hpp"

namespace stormo::serve {
namespace {

using text::Value;

Value header(const ResponseIdentity& who, const char* object) {
    return Value::object({{"id", Value(who.id)},
                          {"object", Value(object)},
                          {"created", Value(who.created)},
                          {"model", Value(who.model)}});
}

std::string with_choice(const ResponseIdentity& who, const char* object, Value choice) {
    Value v = header(who, object);
    v.set("choices", Value::list({std::move(choice)}));
    return text::to_json(v);
}

Value finish_value(FinishReason finish) { return Value(finish_reason_name(finish)); }

}  // namespace

Value usage_value(size_t prompt_tokens, size_t completion_tokens, size_t cached_tokens) {
    return Value::object({{"prompt_tokens", Value(static_cast<int64_t>(prompt_tokens))},
                          {"completion_tokens", Value(static_cast<int64_t>(completion_tokens))},
                          {"total_tokens", Value(static_cast<int64_t>(prompt_tokens + completion_tokens))},
                          {"prompt_tokens_details", Value::object({{"cached_tokens", Value(static_cast<int64_t>(cached_tokens))}})}});
}

Value tool_calls_value(const std::vector<text::ToolCall>& calls, const std::string& id_prefix) {
    text::ValueList list;
    for (size_t i = 0; i < calls.size(); ++i) {
        const text::ToolCall& call = calls[i];
        // OpenAI sends the arguments as JSON text; a model that wrote something else gets its text.
        const std::string arguments = call.arguments.is_string() ? call.arguments.as_string() : text::to_json(call.arguments);
        list.push_back(Value::object(
            {{"index", Value(static_cast<int64_t>(i))},
             {"id", Value(id_prefix + "-call-" + std::to_string(i))},
             {"type", Value("function")},
             {"function", Value::object({{"name", Value(call.name)}, {"arguments", Value(arguments)}})}}));
    }
    return Value::list(std::move(list));
}

std::string chat_completion_json(const ResponseIdentity& who, const JobResult& result) {
    Value message = Value::object({{"role", Value("assistant")}, {"content", Value(result.content)}});
    if (!result.reasoning.empty()) message.set("reasoning_content", Value(result.reasoning));
    if (!result.tool_calls.empty()) message.set("tool_calls", tool_calls_value(result.tool_calls, who.id));
    Value choice = Value::object({{"index", Value(0)},
                                  {"message", std::move(message)},
                                  {"logprobs", Value()},
                                  {"finish_reason", finish_value(result.finish)}});
    Value v = header(who, "chat.completion");
    v.set("choices", Value::list({std::move(choice)}));
    v.set("usage", usage_value(result.prompt_tokens, result.completion_tokens, result.cached_tokens));
    return text::to_json(v);
}

std::string text_completion_json(const ResponseIdentity& who, const JobResult& result) {
    Value choice = Value::object({{"index", Value(0)},
                                  {"text", Value(result.content)},
                                  {"logprobs", Value()},
                                  {"finish_reason", finish_value(result.finish)}});
    Value v = header(who, "text_completion");
    v.set("choices", Value::list({std::move(choice)}));
    v.set("usage", usage_value(result.prompt_tokens, result.completion_tokens, result.cached_tokens));
    return text::to_json(v);
}

std::string chat_role_chunk(const ResponseIdentity& who) {
    return with_choice(who, "chat.completion.chunk",
                       Value::object({{"index", Value(0)},
                                      {"delta", Value::object({{"role", Value("assistant")}, {"content", Value("")}})},
                                      {"logprobs", Value()},
                                      {"finish_reason", Value()}}));
}

std::string chat_piece_chunk(const ResponseIdentity& who, const text::ReplyPiece& piece) {
    const char* key = piece.kind == text::ReplyPiece::Kind::reasoning ? "reasoning_content" : "content";
    return with_choice(who, "chat.completion.chunk",
                       Value::object({{"index", Value(0)},
                                      {"delta", Value::object({{key, Value(piece.text)}})},
                                      {"logprobs", Value()},
                                      {"finish_reason", Value()}}));
}

std::string chat_tool_calls_chunk(const ResponseIdentity& who, const std::vector<text::ToolCall>& calls) {
    return with_choice(who, "chat.completion.chunk",
                       Value::object({{"index", Value(0)},
                                      {"delta", Value::object({{"tool_calls", tool_calls_value(calls, who.id)}})},
                                      {"logprobs", Value()},
                                      {"finish_reason", Value()}}));
}

std::string chat_finish_chunk(const ResponseIdentity& who, FinishReason finish) {
    return with_choice(who, "chat.completion.chunk",
                       Value::object({{"index", Value(0)},
                                      {"delta", Value::object()},
                                      {"logprobs", Value()},
                                      {"finish_reason", finish_value(finish)}}));
}

std::string chat_usage_chunk(const ResponseIdentity& who, const JobResult& result) {
    Value v = header(who, "chat.completion.chunk");
    v.set("choices", Value::list());
    v.set("usage", usage_value(result.prompt_tokens, result.completion_tokens, result.cached_tokens));
    return text::to_json(v);
}

std::string text_piece_chunk(const ResponseIdentity& who, const std::string& text) {
    return with_choice(who, "text_completion",
                       Value::object({{"index", Value(0)},
                                      {"text", Value(text)},
                                      {"logprobs", Value()},
                                      {"finish_reason", Value()}}));
}

std::string text_finish_chunk(const ResponseIdentity& who, FinishReason finish) {
    return with_choice(who, "text_completion",
                       Value::object({{"index", Value(0)},
                                      {"text", Value("")},
                                      {"logprobs", Value()},
                                      {"finish_reason", finish_value(finish)}}));
}

std::string text_usage_chunk(const ResponseIdentity& who, const JobResult& result) {
    Value v = header(who, "text_completion");
    v.set("choices", Value::list());
    v.set("usage", usage_value(result.prompt_tokens, result.completion_tokens, result.cached_tokens));
    return text::to_json(v);
}

std::string models_json(const std::string& model, int64_t created) {
    Value entry = Value::object({{"id", Value(model)},
                                 {"object", Value("model")},
                                 {"created", Value(created)},
                                 {"owned_by", Value("stormo")}});
    return text::to_json(Value::object({{"object", Value("list")}, {"data", Value::list({std::move(entry)})}}));
}

}  // namespace stormo::serve
