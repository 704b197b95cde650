#include "cli/chat_session.hpp"

#include <filesystem>
#include <iostream>

#include "runtime/session_file.hpp"
#include "store/read_ahead.hpp"
#include "util/atomic_file.hpp"
#include "util/format_bytes.hpp"

namespace stormo::cli {
namespace {

// The engine's identity is read once, when a session file is first saved or loaded: a chat that
// keeps none never reads it.
Expected<const EngineIdentity*> identity_of(ChatStack& stack) {
    if (!stack.identity) {
        STORMO_TRY_ASSIGN(EngineIdentity id, engine_identity(*stack.loaded.engine));
        stack.identity = std::move(id);
    }
    return &*stack.identity;
}

size_t message_count(const Conversation& conversation) { return conversation.messages().as_list().size(); }

}  // namespace

Expected<ChatSessionFile> load_chat_session(ChatStack& stack, const std::string& path) {
    STORMO_TRY_ASSIGN(const EngineIdentity* identity, identity_of(stack));
    Engine& engine = *stack.loaded.engine;
    STORMO_TRY_ASSIGN(auto blank, engine.new_session(stack.session->capacity()));
    STORMO_TRY_ASSIGN(LoadedSessionFile loaded, load_session_file(path, *identity, std::move(blank)));
    STORMO_TRY_ASSIGN(ConversationRecord record, Conversation::parse_record(loaded.record, path));
    // Everything that can fail is done: the stack takes the new session and conversation at once.
    auto conversation = std::make_unique<Conversation>(engine.pipeline(), *loaded.session, *stack.tokenizer, *stack.chat_template,
                                                       stack.conversation->settings());
    conversation->restore(std::move(record));
    stack.conversation = std::move(conversation);
    stack.session = std::move(loaded.session);
    const size_t read_ahead = read_ahead_experts(engine.store(), stack.session->routed_experts());
    return ChatSessionFile{stack.session->position(), loaded.stats.bytes, message_count(*stack.conversation), read_ahead};
}

Expected<ChatSessionFile> save_chat_session(ChatStack& stack, const std::string& path) {
    STORMO_TRY_ASSIGN(const EngineIdentity* identity, identity_of(stack));
    auto saved = save_session_file(path, *stack.session, *identity, stack.conversation->record());
    if (!saved) {
        Error e = saved.error();
        e.message += " (" + path + " keeps what it held)";
        return tl::unexpected(std::move(e));
    }
    return ChatSessionFile{stack.session->position(), saved->bytes, message_count(*stack.conversation)};
}

Expected<void> resume_chat_session(ChatStack& stack, const ChatOptions& options) {
    if (!options.session_file) return {};
    const std::string& path = *options.session_file;
    // What saves killed mid-write left beside the file (the file itself is whole: old or new).
    if (auto removed = remove_stale_temp_files(path); removed && *removed > 0)
        std::cerr << "stormo: removed " << *removed << " temporary file" << (*removed == 1 ? "" : "s") << " an interrupted save of " << path
                  << " left" << std::endl;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        if (ec) return fail(ErrorKind::io, "--session " + path + ": " + ec.message());
        return {};
    }
    auto loaded = load_chat_session(stack, path);
    if (!loaded) return tl::unexpected(with_context(loaded.error(), "--session"));
    if (options.system) stack.conversation->set_system(*options.system);
    std::cerr << "stormo: resumed " << path << ": " << loaded->messages << " messages, " << describe(*loaded) << std::endl;
    return {};
}

std::string describe(const ChatSessionFile& file) {
    std::string text = std::to_string(file.positions) + " positions, " + std::to_string(file.bytes) + " bytes (" + format_bytes(file.bytes) + ")";
    if (file.experts_read_ahead > 0) text += ", " + std::to_string(file.experts_read_ahead) + " experts read ahead";
    return text;
}

}  // namespace stormo::cli
