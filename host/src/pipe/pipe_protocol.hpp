#pragma once
// The pipe protocol's lines (`stormo pipe`): what a client may send and what stormo answers, as
// plain values, parsed and formatted apart from any engine so every rule is testable on its own.
//
//   stormo -> client   READY <ctx> <vocab> <stop ids...>
//                      TOKEN <id>
//                      DONE <STOP|MAX_TOKENS|CONTEXT_FULL> <n_out> <pos>
//                      ERROR <code> <fatal 0|1> <message>
//                      SAVED <pos> <bytes>
//                      LOADED <pos>
//   client -> stormo   TURN <max_new> <keep> <temp> <top_p> <top_k> <n> <ids...>
//                      RESET
//                      SAVE <path>        (the rest of the line, spaces included, is the path)
//                      LOAD <path>
//                      SHUTDOWN
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/sampler.hpp"

namespace stormo::pipe {

struct TurnCommand {
    size_t max_new = 0;
    size_t keep = 0;  // positions of the session kept; the rest is forgotten
    SamplingParams sampling;
    std::vector<int32_t> ids;  // consumed after the kept positions, then generation starts
};
struct ResetCommand {};
struct ShutdownCommand {};
// The session to a session file (runtime/session_file.hpp), or the session from one.
struct SaveCommand {
    std::string path;
};
struct LoadCommand {
    std::string path;
};
using Command = std::variant<TurnCommand, ResetCommand, ShutdownCommand, SaveCommand, LoadCommand>;

// Why a line was refused; `code` is one word a program can switch on.
struct LineError {
    std::string code;
    std::string message;
};

// Parses one line (no newline). Checks what the line alone can tell: the verb, every number's
// form and range, that n matches the ids given; the engine-dependent checks (keep against the
// position, ids against the vocabulary, the context) come later, still before any KV change.
std::variant<Command, LineError> parse_line(std::string_view line);

enum class DoneReason { stop, max_tokens, context_full };

std::string ready_line(size_t context, size_t vocab, std::span<const int32_t> stop_ids);
std::string token_line(int32_t id);
std::string done_line(DoneReason reason, size_t n_out, size_t position);
std::string saved_line(size_t position, uint64_t bytes);
std::string loaded_line(size_t position);
// The message is kept on one line: control characters become spaces.
std::string error_line(std::string_view code, bool fatal, std::string_view message);

}  // namespace stormo::pipe
