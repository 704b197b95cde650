#include "reply/reply_parser.hpp"

#include <utility>

namespace stormo::text {
namespace {

bool has_all(const Tokenizer& t, std::initializer_list<const char*> tokens) {
    for (const char* token : tokens)
        if (!t.token_id(token)) return false;
    return true;
}

void drop_leading_newlines(std::string& s) {
    const size_t first = s.find_first_not_of('\n');
    s.erase(0, first == std::string::npos ? s.size() : first);
}

std::string trim_newlines(std::string s) {
    const size_t first = s.find_first_not_of('\n');
    if (first == std::string::npos) return {};
    const size_t last = s.find_last_not_of('\n');
    return s.substr(first, last - first + 1);
}

// A tool call's arguments as the model wrote them: a JSON value when they parse, else the text.
Value arguments_value(const std::string& text) {
    auto parsed = parse_json_value(text, "tool call arguments");
    return parsed ? std::move(*parsed) : Value(text);
}

}  // namespace

// The word after `marker` in a Harmony header ("<|channel|>analysis", "to=functions.get_weather").
std::string header_word(const std::string& header, std::string_view marker) {
    const size_t at = header.find(marker);
    if (at == std::string::npos) return {};
    size_t begin = at + marker.size();
    while (begin < header.size() && header[begin] == ' ') ++begin;
    size_t end = begin;
    while (end < header.size() && header[end] != ' ' && header[end] != '<') ++end;
    return header.substr(begin, end - begin);
}

const char* reply_format_name(ReplyFormat format) {
    switch (format) {
        case ReplyFormat::plain: return "plain";
        case ReplyFormat::harmony: return "harmony";
        case ReplyFormat::think_tags: return "think-tags";
    }
    return "unknown";
}

ReplyFormat detect_reply_format(const Tokenizer& tokenizer) {
    if (has_all(tokenizer, {"<|start|>", "<|channel|>", "<|message|>", "<|end|>"})) return ReplyFormat::harmony;
    if (has_all(tokenizer, {"<think>", "</think>"})) return ReplyFormat::think_tags;
    return ReplyFormat::plain;
}

Value Reply::as_message(ReplyFormat format) const {
    Value message = Value::object({{"role", Value("assistant")}});
    if (!content.empty() || tool_calls.empty()) message.set("content", Value(content));
    if (!reasoning.empty() && format != ReplyFormat::plain)
        message.set(format == ReplyFormat::harmony ? "thinking" : "reasoning_content", Value(reasoning));
    if (!tool_calls.empty()) {
        ValueList calls;
        for (const ToolCall& call : tool_calls)
            calls.push_back(Value::object(
                {{"type", Value("function")},
                 {"function", Value::object({{"name", Value(call.name)}, {"arguments", call.arguments}})}}));
        message.set("tool_calls", Value::list(std::move(calls)));
    }
    return message;
}

ReplyParser::ReplyParser(const Tokenizer& tokenizer, ReplyFormat format)
    : format_(format), decoder_(tokenizer, /*skip_special=*/true) {
    auto id = [&](const char* token) { return tokenizer.token_id(token); };
    specials_ = Specials{id("<|start|>"), id("<|channel|>"), id("<|message|>"), id("<|end|>"), id("<|return|>"),
                         id("<|call|>"), id("<|constrain|>"), id("<think>"), id("</think>"), id("<tool_call>"),
                         id("</tool_call>")};
    // Harmony's generation prompt ends inside a header (`<|start|>assistant`): its channel comes next.
    part_ = format == ReplyFormat::harmony ? Part::header : Part::content;
}

Expected<std::vector<ReplyPiece>> ReplyParser::push(int32_t id) {
    switch (format_) {
        case ReplyFormat::harmony: return push_harmony(id);
        case ReplyFormat::think_tags: return push_think_tags(id);
        case ReplyFormat::plain: break;
    }
    return text_of(id);
}

Expected<std::vector<ReplyPiece>> ReplyParser::push_harmony(int32_t id) {
    const Specials& s = specials_;
    if (id == s.start) {
        close_part();
        part_ = Part::header;
        header_.clear();
        return std::vector<ReplyPiece>{};
    }
    if (id == s.channel || id == s.constrain) {
        if (part_ == Part::header) header_ += id == s.channel ? "<|channel|>" : "<|constrain|>";
        return std::vector<ReplyPiece>{};
    }
    if (id == s.message) {
        if (part_ == Part::header) open_harmony_body();
        return std::vector<ReplyPiece>{};
    }
    if (id == s.end || id == s.ret || id == s.call) {
        std::vector<ReplyPiece> rest = emit(decoder_.finish());
        close_part();
        part_ = Part::ignored;  // until the next <|start|>
        return rest;
    }
    return text_of(id);
}

void ReplyParser::open_harmony_body() {
    const std::string channel = header_word(header_, "<|channel|>");
    recipient_ = header_word(header_, "to=");
    if (!recipient_.empty()) {
        part_ = Part::tool_call;
        tool_text_.clear();
    } else {
        // commentary without a recipient is a preamble the user is meant to see
        part_ = channel == "analysis" ? Part::reasoning : Part::content;
    }
}

Expected<std::vector<ReplyPiece>> ReplyParser::push_think_tags(int32_t id) {
    const Specials& s = specials_;
    Part next = part_;
    if (id == s.think) next = Part::reasoning;
    else if (id == s.think_end || id == s.tool_call_end) next = Part::content;
    else if (id == s.tool_call) next = Part::tool_call;
    else return text_of(id);
    std::vector<ReplyPiece> rest = emit(decoder_.finish());
    close_part();
    part_ = next;
    if (next == Part::tool_call) tool_text_.clear();
    if (next == Part::content) content_started_ = false;
    return rest;
}

Expected<std::vector<ReplyPiece>> ReplyParser::text_of(int32_t id) {
    STORMO_TRY_ASSIGN(std::string text, decoder_.push(id));
    return emit(std::move(text));
}

std::vector<ReplyPiece> ReplyParser::emit(std::string text) {
    std::vector<ReplyPiece> pieces;
    if (text.empty()) return pieces;
    switch (part_) {
        case Part::header: header_ += text; break;
        case Part::tool_call: tool_text_ += text; break;
        case Part::ignored: break;
        case Part::reasoning:
            // The template writes "<think>\n"; the reasoning itself starts after it.
            if (reply_.reasoning.empty()) drop_leading_newlines(text);
            if (text.empty()) break;
            reply_.reasoning += text;
            pieces.push_back({ReplyPiece::Kind::reasoning, std::move(text)});
            break;
        case Part::content:
            // After </think> the template writes "\n\n" before the answer.
            if (!content_started_ && format_ == ReplyFormat::think_tags) {
                drop_leading_newlines(text);
                if (text.empty()) break;
            }
            content_started_ = true;
            reply_.content += text;
            pieces.push_back({ReplyPiece::Kind::content, std::move(text)});
            break;
    }
    return pieces;
}

void ReplyParser::close_part() {
    if (part_ == Part::tool_call) {
        if (format_ == ReplyFormat::harmony) {
            std::string name = recipient_;
            if (name.rfind("functions.", 0) == 0) name.erase(0, std::string("functions.").size());
            reply_.tool_calls.push_back(ToolCall{std::move(name), arguments_value(tool_text_)});
        } else {
            // Qwen3 writes {"name": ..., "arguments": {...}}; anything else stays visible as text.
            auto parsed = parse_json_value(tool_text_, "tool call");
            const Value* name = parsed ? parsed->find("name") : nullptr;
            if (name && name->is_string()) {
                const Value* args = parsed->find("arguments");
                reply_.tool_calls.push_back(ToolCall{name->as_string(), args ? *args : Value::object()});
            } else {
                reply_.content += tool_text_;
            }
        }
        tool_text_.clear();
    }
    if (part_ == Part::reasoning) reply_.reasoning = trim_newlines(reply_.reasoning);
}

std::vector<ReplyPiece> ReplyParser::finish() {
    std::vector<ReplyPiece> rest = emit(decoder_.finish());
    close_part();
    part_ = Part::ignored;
    if (format_ == ReplyFormat::think_tags) {
        const size_t last = reply_.content.find_last_not_of('\n');
        reply_.content.erase(last == std::string::npos ? 0 : last + 1);
    }
    return rest;
}

}  // namespace stormo::text
