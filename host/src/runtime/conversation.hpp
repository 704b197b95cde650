#pragma once
// A conversation in text over one session: each turn re-renders the whole message list with the
// model's own chat template, keeps the KV of the longest prefix the session already holds,
// computes only the rest, and reads the reply back (reasoning, answer, tool calls). The message
// list changes only when a turn succeeds or is cancelled, never when it fails.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/chat_template.hpp"
#include "reply/reply_parser.hpp"
#include "runtime/generation.hpp"
#include "runtime/session.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo {

struct ChatSettings {
    // The template's variables besides messages: reasoning_effort, enable_thinking, tools, ...
    text::Value template_options = text::Value::object();
    size_t max_tokens = 1024;  // per answer; fewer when the context has less room left
    SamplingParams sampling;
    std::vector<int32_t> stop_ids;  // ids that end an answer (the model's eos ids)
    // The prompt's progress block by block (positions done, positions to compute).
    std::function<void(size_t done, size_t total)> on_prefill_block;
    // Structured output: a fresh constraint for each answer (run --json-schema, --grammar).
    std::function<std::shared_ptr<TokenConstraint>()> answer_constraint;
    // Speculative decoding for every answer, and the step costs and acceptance its gate learns
    // across turns.
    SpeculationSettings speculation;
    std::shared_ptr<SpeculationMemory> speculation_memory;
    // What a person can do when the context is full, in the refusal of a turn that does not fit
    // and in TurnResult's note ("/reset starts over" only where there is a /reset).
    std::string context_advice = "--context raises it";
};

// What a session file keeps of a conversation beside its KV (runtime/session_file.hpp's record):
// the system message and the messages, so a conversation restored from it renders the prompt the
// uninterrupted one would, and its next turn reuses every position the file holds.
struct ConversationRecord {
    std::string system;
    text::Value messages = text::Value::list();
};

struct TurnResult {
    text::Reply reply;
    GenerationResult generation;
    size_t prompt_tokens = 0;  // the rendered conversation, the reused positions included
    size_t context = 0;        // the session's positions
    // The answer stopped because it filled the context, not at the settings' max_tokens.
    bool context_full = false;
};

// "context full (N positions; <advice>)" for a turn that filled the context.
std::string context_full_note(size_t context, const std::string& advice);

class Conversation {
public:
    Conversation(Pipeline& pipeline, Session& session, const text::Tokenizer& tokenizer,
                 const text::ChatTemplate& chat_template, ChatSettings settings);

    // A system message first in every rendering (replacing any earlier one); empty removes it.
    void set_system(std::string text);
    // Appends the user's message, answers it, streaming each piece of text as it completes.
    Expected<TurnResult> ask(const std::string& user_text, const std::function<void(const text::ReplyPiece&)>& on_piece,
                             const std::atomic<bool>* cancel = nullptr);
    // Forgets the messages (not the system message). The session keeps its KV: the next turn
    // reuses whatever prefix still matches.
    void reset();

    // The record as JSON text: {"stormo_conversation": 1, "system": ..., "messages": [...]}.
    std::string record() const;
    // Reads record()'s text back; errors name `source` (the session file) and what is wrong.
    static Expected<ConversationRecord> parse_record(std::string_view json, const std::string& source);
    // Replaces the system message and the messages (the session is the caller's to restore).
    void restore(ConversationRecord record);

    // The prompt ids of `messages` with the generation prompt, as the next turn would send them.
    Expected<std::vector<int32_t>> prompt_ids(const text::Value& messages) const;
    // The same before any conversation exists (to size a context for a first message): `system`
    // (empty: none) and `messages` rendered with settings.template_options.
    static Expected<std::vector<int32_t>> render_ids(const text::Tokenizer& tokenizer, const text::ChatTemplate& chat_template,
                                                     const ChatSettings& settings, const std::string& system,
                                                     const text::Value& messages);
    const text::Value& messages() const { return messages_; }
    const std::string& system() const { return system_; }
    text::ReplyFormat format() const { return format_; }
    const ChatSettings& settings() const { return settings_; }
    // Every answer from now on is constrained by what `make` returns (nothing: unconstrained).
    void set_answer_constraint(std::function<std::shared_ptr<TokenConstraint>()> make) {
        settings_.answer_constraint = std::move(make);
    }

private:
    Pipeline* pipeline_;
    Session* session_;
    const text::Tokenizer* tokenizer_;
    const text::ChatTemplate* template_;
    ChatSettings settings_;
    text::ReplyFormat format_;
    std::string system_;
    text::Value messages_ = text::Value::list();
};

}  // namespace stormo
