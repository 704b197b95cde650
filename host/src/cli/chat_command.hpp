#pragma once
// What `stormo run` and `stormo chat` share: the text options, opening the model with its
// tokenizer and chat template, a conversation over one session, and printing a reply as it streams.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cli/model_command.hpp"
#include "jinja/chat_template.hpp"
#include "runtime/conversation.hpp"
#include "runtime/engine_identity.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::cli {

struct ChatOptions {
    std::optional<std::string> system;
    int64_t max_tokens = 1024;
    SamplingParams sampling;
    bool show_reasoning = false;
    std::optional<std::string> reasoning_effort;  // gpt-oss: low, medium, high
    std::optional<std::string> thinking;          // Qwen3: on or off (enable_thinking)
    std::optional<std::string> tools_file;        // a JSON list of tool definitions
    std::optional<std::string> session_file;      // --session: the conversation on disk (cli/chat_session.hpp)
};
// --system --max-tokens --show-reasoning --reasoning-effort --thinking --tools --session and the sampling options.
void add_chat_options(po::options_description& d, ChatOptions& out);
Expected<void> check_chat_options(const ChatOptions& options);

// The engine, the model directory's tokenizer and template (both read before the weights, so a
// broken tokenizer.json fails at once), one session and a conversation over it.
struct ChatStack {
    LoadedEngine loaded;
    std::unique_ptr<text::Tokenizer> tokenizer;
    std::unique_ptr<text::ChatTemplate> chat_template;
    std::unique_ptr<Session> session;
    std::unique_ptr<Conversation> conversation;
    std::optional<EngineIdentity> identity;  // read when a session file is first saved or loaded
};
// What differs between `run` and `chat` when the stack opens.
struct ChatUse {
    // run: its message. Without --session (which may hold a conversation of any length) the
    // context is what the rendered message and --max-tokens need; else it is chosen from memory.
    std::optional<std::string> prompt;
    // The ChatSettings::context_advice of the conversation.
    std::string context_advice = "--context raises it";
};

Expected<std::unique_ptr<ChatStack>> open_chat(const CommonOptions& common, const ChatOptions& options, const ChatUse& use);

// Prints a reply's pieces as they come: the answer to stdout, the reasoning too when asked (dimmed
// on a terminal, set apart by a blank line), and remembers whether the answer ended its line.
class ReplyPrinter {
public:
    explicit ReplyPrinter(bool show_reasoning);
    void print(const text::ReplyPiece& piece);
    // Ends the reply with a newline unless it already ended with one.
    void finish();

private:
    bool show_reasoning_;
    bool colour_;
    bool in_reasoning_ = false;
    bool line_open_ = false;
};

// "prompt 57 tokens (40 reused) 120.3 tok/s, answer 12 tokens 8.1 tok/s" for stderr, and why the
// answer stopped when it did not end by itself ("context full (N positions; <advice>)").
std::string turn_speed(const TurnResult& turn, const std::string& context_advice);

// Ctrl-C while SigintFlag lives sets its flag instead of ending the program.
class SigintFlag {
public:
    SigintFlag();
    ~SigintFlag();
    SigintFlag(const SigintFlag&) = delete;
    SigintFlag& operator=(const SigintFlag&) = delete;
    const std::atomic<bool>& flag() const;
    void clear();
};

}  // namespace stormo::cli
