#include "runtime/conversation.hpp"

#include <utility>

namespace stormo {

Conversation::Conversation(Pipeline& pipeline, Session& session, const text::Tokenizer& tokenizer,
                           const text::ChatTemplate& chat_template, ChatSettings settings)
    : pipeline_(&pipeline),
      session_(&session),
      tokenizer_(&tokenizer),
      template_(&chat_template),
      settings_(std::move(settings)),
      format_(text::detect_reply_format(tokenizer)) {}

void Conversation::set_system(std::string text) { system_ = std::move(text); }

void Conversation::reset() { messages_ = text::Value::list(); }

namespace {
// The record's version: a reader refuses a record it does not know instead of guessing.
constexpr int64_t kRecordVersion = 1;
}  // namespace

std::string Conversation::record() const {
    text::Value record = text::Value::object();
    record.set("stormo_conversation", text::Value(kRecordVersion));
    record.set("system", text::Value(system_));
    record.set("messages", messages_);
    return text::to_json(record);
}

Expected<ConversationRecord> Conversation::parse_record(std::string_view json, const std::string& source) {
    if (json.empty())
        return fail(ErrorKind::format, source + ": the session holds no conversation (it was saved by stormo pipe or another program)");
    auto parsed = text::parse_json_value(json, source + " (its conversation)");
    if (!parsed) return tl::unexpected(parsed.error());
    const text::Value& v = *parsed;
    const text::Value* version = v.is_object() ? v.find("stormo_conversation") : nullptr;
    if (version == nullptr || !version->is_int())
        return fail(ErrorKind::format, source + ": the session's record is not a stormo conversation");
    if (version->as_int() != kRecordVersion)
        return fail(ErrorKind::unsupported, source + ": a conversation record of version " + std::to_string(version->as_int()) +
                                                ", this stormo reads version " + std::to_string(kRecordVersion));
    const text::Value* system = v.find("system");
    const text::Value* messages = v.find("messages");
    if (system == nullptr || !system->is_string())
        return fail(ErrorKind::format, source + ": the session's conversation has no \"system\" text");
    if (messages == nullptr || !messages->is_list())
        return fail(ErrorKind::format, source + ": the session's conversation has no \"messages\" list");
    for (size_t i = 0; i < messages->as_list().size(); ++i) {
        const text::Value& m = messages->as_list()[i];
        const text::Value* role = m.is_object() ? m.find("role") : nullptr;
        if (role == nullptr || !role->is_string())
            return fail(ErrorKind::format, source + ": the session's message " + std::to_string(i) + " has no \"role\" text");
    }
    return ConversationRecord{system->as_string(), *messages};
}

void Conversation::restore(ConversationRecord record) {
    system_ = std::move(record.system);
    // A list of its own: text::Value copies share their storage.
    messages_ = text::Value::list(record.messages.as_list());
}

namespace {

text::Value with_system(const std::string& system, const text::Value& messages) {
    if (system.empty()) return messages;
    text::ValueList all;
    all.push_back(text::Value::object({{"role", text::Value("system")}, {"content", text::Value(system)}}));
    for (const auto& m : messages.as_list()) all.push_back(m);
    return text::Value::list(std::move(all));
}

}  // namespace

std::string context_full_note(size_t context, const std::string& advice) {
    return "context full (" + std::to_string(context) + " positions; " + advice + ")";
}

Expected<std::vector<int32_t>> Conversation::render_ids(const text::Tokenizer& tokenizer, const text::ChatTemplate& chat_template,
                                                        const ChatSettings& settings, const std::string& system,
                                                        const text::Value& messages) {
    // A copy of the members: text::Value shares a list's or an object's storage between copies.
    text::Value options = text::Value::object(settings.template_options.as_object());
    options.set("add_generation_prompt", text::Value(true));
    STORMO_TRY_ASSIGN(std::string prompt, chat_template.render(with_system(system, messages), options));
    // The rendered text carries the template's special tokens as text: they are matched as such.
    std::vector<int32_t> ids = tokenizer.encode(prompt, /*match_special=*/true);
    if (ids.empty()) return fail(ErrorKind::invalid_argument, "the chat template rendered an empty prompt");
    return ids;
}

Expected<std::vector<int32_t>> Conversation::prompt_ids(const text::Value& messages) const {
    return render_ids(*tokenizer_, *template_, settings_, system_, messages);
}

Expected<TurnResult> Conversation::ask(const std::string& user_text,
                                       const std::function<void(const text::ReplyPiece&)>& on_piece,
                                       const std::atomic<bool>* cancel) {
    // A new list, not a copy of the Value: copies share their list, and a refused turn's message
    // pushed onto it would stay in the conversation.
    text::Value next = text::Value::list(messages_.as_list());
    next.as_list().push_back(text::Value::object({{"role", text::Value("user")}, {"content", text::Value(user_text)}}));
    STORMO_TRY_ASSIGN(std::vector<int32_t> prompt, prompt_ids(next));
    // Checked before the session changes: a prompt with no room for one answer token is refused.
    if (prompt.size() >= session_->capacity())
        return fail(ErrorKind::resource, "the conversation is " + std::to_string(prompt.size()) +
                                             " tokens, the context holds " + std::to_string(session_->capacity()) + " (" +
                                             settings_.context_advice + ")");
    GenerationRequest request;
    request.prompt = std::move(prompt);
    request.max_tokens = std::min(settings_.max_tokens, session_->capacity() - request.prompt.size());
    request.sampling = settings_.sampling;
    request.stop_ids = settings_.stop_ids;
    request.whole_context = true;
    request.cancel = cancel;
    request.on_prefill_block = settings_.on_prefill_block;
    if (settings_.answer_constraint) request.constraint = settings_.answer_constraint();
    request.speculation = settings_.speculation;
    request.speculation_memory = settings_.speculation_memory;

    text::ReplyParser parser(*tokenizer_, format_);
    Error parse_error;
    bool parse_failed = false;
    auto on_token = [&](int32_t id) {
        if (parse_failed) return;
        auto pieces = parser.push(id);
        if (!pieces) {
            parse_error = pieces.error();
            parse_failed = true;
            return;
        }
        if (on_piece)
            for (const auto& piece : *pieces) on_piece(piece);
    };
    STORMO_TRY_ASSIGN(GenerationResult generated, generate(*pipeline_, *session_, request, on_token));
    if (parse_failed) return tl::unexpected(parse_error);
    if (on_piece)
        for (const auto& piece : parser.finish()) on_piece(piece);
    else
        parser.finish();

    TurnResult result;
    result.reply = parser.reply();
    result.generation = std::move(generated);
    result.prompt_tokens = request.prompt.size();
    result.context = session_->capacity();
    // Full when the context, not the settings' max_tokens, set this answer's limit and it was reached.
    result.context_full = result.generation.reason == StopReason::max_tokens && request.max_tokens < settings_.max_tokens;
    next.as_list().push_back(result.reply.as_message(format_));
    messages_ = std::move(next);
    return result;
}

}  // namespace stormo
