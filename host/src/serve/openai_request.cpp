#include "util/format_number.hpp"
#include "serve/openai_request.hpp"

#include <cmath>
#include <limits>

#include "serve/structured_request.hpp"
#include "stormo/quote.hpp"

namespace stormo::serve {
namespace {

using text::Value;

ApiExpected<Value> parse_body(std::string_view body) {
    auto parsed = text::parse_json_value(body, "the request body");
    if (!parsed) return bad_request("the request body is not valid JSON: " + parsed.error().message);
    if (!parsed->is_object()) return bad_request("the request body must be a JSON object");
    return *parsed;
}

const char* type_name(const Value& v) {
    if (v.is_null()) return "null";
    if (v.is_bool()) return "a boolean";
    if (v.is_int() || v.is_float()) return "a number";
    if (v.is_string()) return "a string";
    if (v.is_list()) return "an array";
    return "an object";
}

tl::unexpected<ApiError> wrong_type(const std::string& field, const char* expected, const Value& got) {
    return bad_request("'" + field + "' must be " + expected + ", not " + type_name(got), field);
}

// A field that is absent or null counts as not given.
const Value* field(const Value& object, std::string_view key) {
    const Value* v = object.find(key);
    return v && !v->is_null() ? v : nullptr;
}

ApiExpected<std::optional<bool>> boolean(const Value& body, const std::string& key) {
    const Value* v = field(body, key);
    if (!v) return std::optional<bool>{};
    if (!v->is_bool()) return wrong_type(key, "a boolean", *v);
    return std::optional<bool>{v->as_bool()};
}

ApiExpected<std::optional<double>> number(const Value& body, const std::string& key, double lo, double hi) {
    const Value* v = field(body, key);
    if (!v) return std::optional<double>{};
    if (!v->is_int() && !v->is_float()) return wrong_type(key, "a number", *v);
    const double d = v->as_double();
    if (!std::isfinite(d) || d < lo || d > hi)
        return bad_request("'" + key + "' must be between " + format_number(lo) + " and " + format_number(hi) + ", not " +
                               format_number(d),
                           key);
    return std::optional<double>{d};
}

ApiExpected<std::optional<int64_t>> integer(const Value& body, const std::string& key, int64_t lo, int64_t hi) {
    const Value* v = field(body, key);
    if (!v) return std::optional<int64_t>{};
    if (!v->is_int()) return wrong_type(key, "an integer", *v);
    const int64_t i = v->as_int();
    if (i < lo || i > hi)
        return bad_request("'" + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", not " +
                               std::to_string(i),
                           key);
    return std::optional<int64_t>{i};
}

// The fields both endpoints share: sampling, limits, stop, n, stream.
ApiExpected<void> read_common(const Value& body, CompletionRequest& out) {
    auto stream = boolean(body, "stream");
    if (!stream) return tl::unexpected(stream.error());
    out.stream = stream->value_or(false);
    if (const Value* options = field(body, "stream_options")) {
        if (!options->is_object()) return wrong_type("stream_options", "an object", *options);
        auto usage = boolean(*options, "include_usage");
        if (!usage) {
            usage.error().param = "stream_options.include_usage";
            return tl::unexpected(usage.error());
        }
        out.include_usage = usage->value_or(false);
    }
    // Both names are accepted (max_tokens is deprecated in OpenAI's API); max_completion_tokens wins.
    for (const char* key : {"max_tokens", "max_completion_tokens"}) {
        auto limit = integer(body, key, 1, kMaxTokensCap);
        if (!limit) return tl::unexpected(limit.error());
        if (*limit) out.max_tokens = **limit;
    }
    auto n = integer(body, "n", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    if (!n) return tl::unexpected(n.error());
    if (*n && **n != 1) return bad_request("'n' must be 1: this server generates one choice per request", "n");

    auto temperature = number(body, "temperature", 0.0, 2.0);
    if (!temperature) return tl::unexpected(temperature.error());
    auto top_p = number(body, "top_p", 0.0, 1.0);
    if (!top_p) return tl::unexpected(top_p.error());
    if (*top_p && **top_p == 0.0) return bad_request("'top_p' must be greater than 0", "top_p");
    auto min_p = number(body, "min_p", 0.0, 1.0);
    if (!min_p) return tl::unexpected(min_p.error());
    if (*min_p && **min_p >= 1.0) return bad_request("'min_p' must be below 1", "min_p");
    auto top_k = integer(body, "top_k", 0, std::numeric_limits<int>::max());
    if (!top_k) return tl::unexpected(top_k.error());
    auto seed = integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    if (!seed) return tl::unexpected(seed.error());
    auto ignore_eos = boolean(body, "ignore_eos");
    if (!ignore_eos) return tl::unexpected(ignore_eos.error());
    if (*temperature) out.sampling.temperature = static_cast<float>(**temperature);
    if (*top_p) out.sampling.top_p = static_cast<float>(**top_p);
    if (*min_p) out.sampling.min_p = static_cast<float>(**min_p);
    if (*top_k) out.sampling.top_k = static_cast<int>(**top_k);
    if (*seed) out.sampling.seed = static_cast<uint64_t>(**seed);
    out.ignore_eos = ignore_eos->value_or(false);
    auto grammar = read_structured_output(body);
    if (!grammar) return tl::unexpected(grammar.error());
    out.grammar = std::move(*grammar);
    // Speculative decoding per request (docs/speculation.md): the same tokens either way.
    if (const Value* speculate = field(body, "speculate")) {
        if (!speculate->is_string()) return wrong_type("speculate", "a string", *speculate);
        const std::optional<SpeculateMode> mode = speculate_mode_from_name(speculate->as_string());
        if (!mode)
            return bad_request("'speculate' must be one of auto, off, context, mtp, grammar, not '" +
                                   printable(speculate->as_string()) + "'",
                               "speculate");
        // Whether the served model has an MTP layer loaded for `mtp` is the worker's to say (a
        // 400 before the request touches a slot): the parser knows no model.
        out.speculate = *mode;
    }
    auto draft_max = integer(body, "draft_max", 1, static_cast<int64_t>(SpeculationSettings::kDraftMaxLimit));
    if (!draft_max) return tl::unexpected(draft_max.error());
    if (*draft_max) out.draft_max = static_cast<size_t>(**draft_max);

    if (const Value* stop = field(body, "stop")) {
        std::vector<Value> items;
        if (stop->is_string())
            items.push_back(*stop);
        else if (stop->is_list())
            items = stop->as_list();
        else
            return wrong_type("stop", "a string or an array of strings", *stop);
        if (items.size() > kMaxStops)
            return bad_request("'stop' holds at most " + std::to_string(kMaxStops) + " sequences", "stop");
        for (const Value& item : items) {
            if (!item.is_string()) return wrong_type("stop", "a string or an array of strings", item);
            if (item.as_string().empty()) return bad_request("'stop' sequences must not be empty", "stop");
            if (item.as_string().size() > kMaxStopBytes)
                return bad_request("'stop' sequences are at most " + std::to_string(kMaxStopBytes) + " bytes", "stop");
            out.stop.push_back(item.as_string());
        }
    }
    return {};
}

// Chat: logprobs (a boolean) and top_logprobs (0 to 20, only with logprobs true).
ApiExpected<void> read_chat_logprobs(const Value& body, CompletionRequest& out) {
    auto wanted = boolean(body, "logprobs");
    if (!wanted) return tl::unexpected(wanted.error());
    auto top = integer(body, "top_logprobs", 0, kMaxTopLogprobs);
    if (!top) return tl::unexpected(top.error());
    if (*top && !wanted->value_or(false))
        return bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    if (wanted->value_or(false)) out.top_logprobs = static_cast<size_t>(top->value_or(0));
    return {};
}

// Text completions: logprobs N, the alternatives listed per token (0 to 20).
ApiExpected<void> read_completion_logprobs(const Value& body, CompletionRequest& out) {
    auto top = integer(body, "logprobs", 0, kMaxTopLogprobs);
    if (!top) return tl::unexpected(top.error());
    if (*top) out.top_logprobs = static_cast<size_t>(**top);
    return {};
}

// A message's content as text: a string, or an array of {"type": "text", "text": ...} parts.
ApiExpected<Value> message_content(const Value& content, const std::string& where) {
    if (content.is_string()) return content;
    if (!content.is_list()) return wrong_type(where, "a string or an array of text parts", content);
    std::string joined;
    for (const Value& part : content.as_list()) {
        const Value* type = part.is_object() ? part.find("type") : nullptr;
        const Value* text = part.is_object() ? part.find("text") : nullptr;
        if (!type || !type->is_string() || type->as_string() != "text" || !text || !text->is_string())
            return bad_request("'" + where + "' parts must be {\"type\": \"text\", \"text\": \"...\"}", where);
        joined += text->as_string();
    }
    return Value(std::move(joined));
}

bool known_role(const std::string& role) {
    return role == "system" || role == "developer" || role == "user" || role == "assistant" || role == "tool";
}

ApiExpected<Value> read_messages(const Value& body) {
    const Value* messages = field(body, "messages");
    if (!messages) return bad_request("'messages' is required", "messages");
    if (!messages->is_list()) return wrong_type("messages", "an array", *messages);
    if (messages->as_list().empty()) return bad_request("'messages' must hold at least one message", "messages");
    text::ValueList out;
    for (size_t i = 0; i < messages->as_list().size(); ++i) {
        const Value& m = messages->as_list()[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) return wrong_type(where, "an object", m);
        const Value* role = m.find("role");
        if (!role || !role->is_string()) return bad_request("'" + where + ".role' must be a string", where + ".role");
        if (!known_role(role->as_string()))
            return bad_request("'" + where + ".role' is \"" + role->as_string() +
                                   "\"; it must be system, developer, user, assistant or tool",
                               where + ".role");
        Value copy = Value::object(m.as_object());  // a new object: copies of a Value share its members
        const Value* content = field(m, "content");
        const bool has_tool_calls = field(m, "tool_calls") != nullptr;
        if (!content) {
            if (role->as_string() != "assistant" || !has_tool_calls)
                return bad_request("'" + where + ".content' is required", where + ".content");
            copy.set("content", Value(""));
        } else {
            auto text = message_content(*content, where + ".content");
            if (!text) return tl::unexpected(text.error());
            copy.set("content", std::move(*text));
        }
        out.push_back(std::move(copy));
    }
    return Value::list(std::move(out));
}

ApiExpected<Value> read_template_options(const Value& body) {
    Value options = Value::object();
    if (const Value* kwargs = field(body, "chat_template_kwargs")) {
        if (!kwargs->is_object()) return wrong_type("chat_template_kwargs", "an object", *kwargs);
        for (const auto& [key, value] : kwargs->as_object()) options.set(key, value);
    }
    if (const Value* effort = field(body, "reasoning_effort")) {
        if (!effort->is_string()) return wrong_type("reasoning_effort", "a string", *effort);
        const std::string& e = effort->as_string();
        if (e != "low" && e != "medium" && e != "high")
            return bad_request("'reasoning_effort' must be low, medium or high, not \"" + e + "\"", "reasoning_effort");
        options.set("reasoning_effort", *effort);
    }
    if (const Value* tools = field(body, "tools")) {
        if (!tools->is_list()) return wrong_type("tools", "an array", *tools);
        for (const Value& tool : tools->as_list())
            if (!tool.is_object()) return wrong_type("tools", "an array of objects", tool);
        options.set("tools", *tools);
    }
    return options;
}

ApiExpected<void> check_model_field(const Value& body) {
    if (const Value* model = field(body, "model"); model && !model->is_string())
        return wrong_type("model", "a string", *model);
    return {};
}

}  // namespace

ApiExpected<CompletionRequest> parse_chat_request(std::string_view body_text) {
    auto body = parse_body(body_text);
    if (!body) return tl::unexpected(body.error());
    CompletionRequest out;
    out.endpoint = Endpoint::chat;
    if (auto ok = check_model_field(*body); !ok) return tl::unexpected(ok.error());
    auto messages = read_messages(*body);
    if (!messages) return tl::unexpected(messages.error());
    out.messages = std::move(*messages);
    if (auto ok = read_common(*body, out); !ok) return tl::unexpected(ok.error());
    auto options = read_template_options(*body);
    if (!options) return tl::unexpected(options.error());
    out.template_options = std::move(*options);
    if (auto ok = read_chat_logprobs(*body, out); !ok) return tl::unexpected(ok.error());
    return out;
}

namespace {

// OpenAI's text completions fields this server does not serve, refused rather than ignored (an
// ignored echo or suffix answers 200 with another text than asked for); their neutral values pass.
ApiExpected<void> refuse_unserved_completion_fields(const Value& body) {
    auto echo = boolean(body, "echo");
    if (!echo) return tl::unexpected(echo.error());
    if (*echo && **echo) return bad_request("'echo' is not supported: the answer never repeats the prompt", "echo");
    if (const Value* suffix = field(body, "suffix"); suffix && !suffix->is_null()) {
        if (!suffix->is_string()) return wrong_type("suffix", "a string or null", *suffix);
        if (!suffix->as_string().empty()) return bad_request("'suffix' is not supported (no insertion mode)", "suffix");
    }
    auto best_of = integer(body, "best_of", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    if (!best_of) return tl::unexpected(best_of.error());
    if (*best_of && **best_of != 1) return bad_request("'best_of' must be 1: this server generates one choice per request", "best_of");
    return {};
}

}  // namespace

ApiExpected<CompletionRequest> parse_completion_request(std::string_view body_text) {
    auto body = parse_body(body_text);
    if (!body) return tl::unexpected(body.error());
    CompletionRequest out;
    out.endpoint = Endpoint::completion;
    if (auto ok = check_model_field(*body); !ok) return tl::unexpected(ok.error());
    const Value* prompt = field(*body, "prompt");
    if (!prompt) return bad_request("'prompt' is required", "prompt");
    if (prompt->is_list() && prompt->as_list().size() == 1 && prompt->as_list()[0].is_string())
        out.prompt = prompt->as_list()[0].as_string();
    else if (prompt->is_string())
        out.prompt = prompt->as_string();
    else
        return wrong_type("prompt", "a string (or an array of one string)", *prompt);
    if (out.prompt.empty()) return bad_request("'prompt' must not be empty", "prompt");
    if (auto ok = read_common(*body, out); !ok) return tl::unexpected(ok.error());
    if (auto ok = read_completion_logprobs(*body, out); !ok) return tl::unexpected(ok.error());
    if (auto ok = refuse_unserved_completion_fields(*body); !ok) return tl::unexpected(ok.error());
    return out;
}

ApiExpected<TokenizeRequest> parse_tokenize_request(std::string_view body_text) {
    auto body = parse_body(body_text);
    if (!body) return tl::unexpected(body.error());
    TokenizeRequest out;
    const Value* content = field(*body, "content");
    if (!content) return bad_request("'content' is required", "content");
    if (!content->is_string()) return wrong_type("content", "a string", *content);
    out.content = content->as_string();
    auto add_special = boolean(*body, "add_special");
    if (!add_special) return tl::unexpected(add_special.error());
    out.add_special = add_special->value_or(false);
    return out;
}

ApiExpected<DetokenizeRequest> parse_detokenize_request(std::string_view body_text) {
    auto body = parse_body(body_text);
    if (!body) return tl::unexpected(body.error());
    const Value* tokens = field(*body, "tokens");
    if (!tokens) return bad_request("'tokens' is required", "tokens");
    if (!tokens->is_list()) return wrong_type("tokens", "an array of integers", *tokens);
    DetokenizeRequest out;
    for (const Value& t : tokens->as_list()) {
        if (!t.is_int() || t.as_int() < 0 || t.as_int() > std::numeric_limits<int32_t>::max())
            return bad_request("'tokens' must hold token ids (integers >= 0)", "tokens");
        out.tokens.push_back(static_cast<int32_t>(t.as_int()));
    }
    return out;
}

}  // namespace stormo::serve
