#pragma once
// A conversation on disk for `stormo run` and `stormo chat` (--session FILE, chat's /save and
// /load): the session's tokens and KV in a session file (runtime/session_file.hpp) whose record is
// the conversation's messages (Conversation::record), so a restored chat renders the prompt the
// uninterrupted one would and its next turn computes only what the file does not hold.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cli/chat_command.hpp"

namespace stormo::cli {

struct ChatSessionFile {
    size_t positions = 0;
    uint64_t bytes = 0;
    size_t messages = 0;
    size_t experts_read_ahead = 0;  // a load: the experts its last step routed to, asked of a streaming store
};

// Loads FILE into a new session of the stack's context and restores its conversation; on any
// error (a refused file, a record that is no conversation) the stack is as it was and FILE is
// untouched. Errors name FILE.
Expected<ChatSessionFile> load_chat_session(ChatStack& stack, const std::string& path);

// Saves the stack's session and conversation to FILE, atomically: a failed save leaves what FILE
// held.
Expected<ChatSessionFile> save_chat_session(ChatStack& stack, const std::string& path);

// At start, for --session FILE: loads FILE when it exists (then --system, when given, replaces the
// saved system message) and says so on stderr; a missing FILE starts a new conversation.
Expected<void> resume_chat_session(ChatStack& stack, const ChatOptions& options);

// "57 positions, 12345 bytes (12.06 KiB)" for messages (", 24 experts read ahead" after a load
// into a streaming store).
std::string describe(const ChatSessionFile& file);

}  // namespace stormo::cli
