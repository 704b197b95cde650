#include "serve/openai_response.hpp"

#include <cmath>

#include "util/utf8.hpp"

namespace stormo::serve {
namespace {

using text::Value;

// A token of no probability at all (a logit of -inf) gets OpenAI's stand-in: JSON has no -Infinity.
constexpr double kNoProbability = -9999.0;

Value logprob_value(double logprob) { return Value(std::isfinite(logprob) ? logprob : kNoProbability); }

// A token's text as JSON carries it: a token that ends inside a character shows U+FFFD for the
// part it holds (its `bytes` are exact).
std::string token_text(const TokenChoice& t) { return text::utf8::lossy(t.bytes); }

Value bytes_value(const std::string& bytes) {
    text::ValueList out;
    out.reserve(bytes.size());
    for (const char c : bytes) out.emplace_back(static_cast<int64_t>(static_cast<unsigned char>(c)));
    return Value::list(std::move(out));
}

Value chat_token_value(const TokenChoice& t) {
    return Value::object({{"token", Value(token_text(t))}, {"logprob", logprob_value(t.logprob)}, {"bytes", bytes_value(t.bytes)}});
}

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

Value chat_logprobs_value(std::span<const LogprobEntry> entries) {
    text::ValueList content;
    for (const LogprobEntry& e : entries) {
        Value entry = chat_token_value(e.token);
        text::ValueList top;
        for (const TokenChoice& t : e.top) top.push_back(chat_token_value(t));
        entry.set("top_logprobs", Value::list(std::move(top)));
        content.push_back(std::move(entry));
    }
    return Value::object({{"content", Value::list(std::move(content))}, {"refusal", Value()}});
}

Value text_logprobs_value(std::span<const LogprobEntry> entries, size_t& offset) {
    text::ValueList tokens, token_logprobs, top_logprobs, text_offset;
    for (const LogprobEntry& e : entries) {
        tokens.emplace_back(token_text(e.token));
        token_logprobs.push_back(logprob_value(e.token.logprob));
        Value top = Value::object();
        for (const TokenChoice& t : e.top) top.set(token_text(t), logprob_value(t.logprob));
        top_logprobs.push_back(std::move(top));
        text_offset.emplace_back(static_cast<int64_t>(offset));
        // A special token is not part of a text completion's text.
        if (!e.token.special) offset += e.token.bytes.size();
    }
    return Value::object({{"tokens", Value::list(std::move(tokens))},
                          {"token_logprobs", Value::list(std::move(token_logprobs))},
                          {"top_logprobs", Value::list(std::move(top_logprobs))},
                          {"text_offset", Value::list(std::move(text_offset))}});
}

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

std::string chat_completion_json(const ResponseIdentity& who, const JobResult& result, bool logprobs) {
    Value message = Value::object({{"role", Value("assistant")}, {"content", Value(result.content)}});
    if (!result.reasoning.empty()) message.set("reasoning_content", Value(result.reasoning));
    if (!result.tool_calls.empty()) message.set("tool_calls", tool_calls_value(result.tool_calls, who.id));
    Value choice = Value::object({{"index", Value(0)},
                                  {"message", std::move(message)},
                                  {"logprobs", logprobs ? chat_logprobs_value(result.logprobs) : Value()},
                                  {"finish_reason", finish_value(result.finish)}});
    Value v = header(who, "chat.completion");
    v.set("choices", Value::list({std::move(choice)}));
    v.set("usage", usage_value(result.prompt_tokens, result.completion_tokens, result.cached_tokens));
    return text::to_json(v);
}

std::string text_completion_json(const ResponseIdentity& who, const JobResult& result, bool logprobs) {
    size_t offset = 0;
    Value choice = Value::object({{"index", Value(0)},
                                  {"text", Value(result.content)},
                                  {"logprobs", logprobs ? text_logprobs_value(result.logprobs, offset) : Value()},
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

std::string chat_piece_chunk(const ResponseIdentity& who, const text::ReplyPiece& piece, const Value& logprobs) {
    const char* key = piece.kind == text::ReplyPiece::Kind::reasoning ? "reasoning_content" : "content";
    return with_choice(who, "chat.completion.chunk",
                       Value::object({{"index", Value(0)},
                                      {"delta", Value::object({{key, Value(piece.text)}})},
                                      {"logprobs", logprobs},
                                      {"finish_reason", Value()}}));
}

std::string chat_tool_calls_chunk(const ResponseIdentity& who, const std::vector<text::ToolCall>& calls) {
    return with_choice(who, "chat.completion.chunk",
                       Value::object({{"index", Value(0)},
                                      {"delta", Value::object({{"tool_calls", tool_calls_value(calls, who.id)}})},
                                      {"logprobs", Value()},
                                      {"finish_reason", Value()}}));
}

std::string chat_finish_chunk(const ResponseIdentity& who, FinishReason finish, const Value& logprobs) {
    return with_choice(who, "chat.completion.chunk",
                       Value::object({{"index", Value(0)},
                                      {"delta", Value::object()},
                                      {"logprobs", logprobs},
                                      {"finish_reason", finish_value(finish)}}));
}

std::string chat_usage_chunk(const ResponseIdentity& who, const JobResult& result) {
    Value v = header(who, "chat.completion.chunk");
    v.set("choices", Value::list());
    v.set("usage", usage_value(result.prompt_tokens, result.completion_tokens, result.cached_tokens));
    return text::to_json(v);
}

std::string text_piece_chunk(const ResponseIdentity& who, const std::string& text, const Value& logprobs) {
    return with_choice(who, "text_completion",
                       Value::object({{"index", Value(0)},
                                      {"text", Value(text)},
                                      {"logprobs", logprobs},
                                      {"finish_reason", Value()}}));
}

std::string text_finish_chunk(const ResponseIdentity& who, FinishReason finish, const Value& logprobs) {
    return with_choice(who, "text_completion",
                       Value::object({{"index", Value(0)},
                                      {"text", Value("")},
                                      {"logprobs", logprobs},
                                      {"finish_reason", finish_value(finish)}}));
}

std::string text_usage_chunk(const ResponseIdentity& who, const JobResult& result) {
    Value v = header(who, "text_completion");
    v.set("choices", Value::list());
    v.set("usage", usage_value(result.prompt_tokens, result.completion_tokens, result.cached_tokens));
    return text::to_json(v);
}

namespace {

Value model_value(const std::string& model, int64_t created) {
    return Value::object({{"id", Value(model)},
                          {"object", Value("model")},
                          {"created", Value(created)},
                          {"owned_by", Value("stormo")}});
}

}  // namespace

std::string models_json(const std::string& model, int64_t created) {
    return text::to_json(Value::object({{"object", Value("list")}, {"data", Value::list({model_value(model, created)})}}));
}

std::string model_json(const std::string& model, int64_t created) { return text::to_json(model_value(model, created)); }

}  // namespace stormo::serve
