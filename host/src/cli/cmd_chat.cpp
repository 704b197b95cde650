// stormo chat: an interactive, multi-turn conversation. Each turn re-renders the conversation with
// the model's template and computes only what the session does not already hold.
#include <unistd.h>

#include <iostream>
#include <optional>
#include <string_view>

#include "cli/chat_command.hpp"
#include "cli/chat_session.hpp"
#include "cli/commands.hpp"
#include "cli/line_reader.hpp"
#include "util/format_bytes.hpp"

namespace stormo::cli {
namespace {

// The longest message line kept: some million tokens of text, more than any model's context, and
// well within what a template may render (jinja/render_limits.hpp). A longer line is skipped with
// its length, not read into memory whole.
constexpr size_t kMaxMessageBytes = size_t{4} << 20;

constexpr const char* kChatHelp =
    "Type a message and press Enter. Ctrl-C stops an answer; Ctrl-D or /quit leaves.\n"
    "  /reset        start a new conversation\n"
    "  /stats        context used, speed, expert-store and speculation figures\n"
    "  /save [FILE]  save the conversation and its KV (default: the --session file)\n"
    "  /load [FILE]  continue a saved conversation (default: the --session file)\n"
    "  /quit         leave\n";

std::string trimmed(const std::string& s) {
    const size_t first = s.find_first_not_of(" \t\r");
    if (first == std::string::npos) return {};
    return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// What /stats counts from: the engine's counters at the last /reset (or the start).
struct StatsBase {
    uint64_t hits = 0, misses = 0, bytes_read = 0, replays = 0;
    SpeculationStats speculation = {};  // summed over the turns since

    static StatsBase now(Engine& engine) {
        const ExpertStoreStats store = engine.store().stats();
        return {store.hits, store.misses, store.bytes_read, engine.pipeline().times().replays};
    }
};

void print_stats(ChatStack& stack, size_t turns, const StatsBase& base) {
    const StatsBase now = StatsBase::now(*stack.loaded.engine);
    // After a /reset the conversation holds nothing yet (the session keeps its KV for reuse).
    const size_t held = stack.conversation->messages().as_list().empty() ? 0 : stack.session->position();
    std::cout << "turns " << turns << ", context " << held << " of " << stack.session->capacity()
              << " positions held; experts " << now.hits - base.hits << " hits, " << now.misses - base.misses << " misses, "
              << format_bytes(now.bytes_read - base.bytes_read) << " read; KV replays " << now.replays - base.replays << "\n";
    const SpeculationStats& s = base.speculation;
    const SpeculateMode mode = stack.loaded.engine->speculation().mode;
    if (mode == SpeculateMode::off) return;
    std::cout << "speculation " << speculate_mode_name(mode) << ": " << s.verify_steps << " verify steps ("
              << (s.verify_steps ? s.verify_seconds / static_cast<double>(s.verify_steps) * 1e3 : 0.0) << " ms each), "
              << s.plain_steps << " plain (" << (s.plain_steps ? s.plain_seconds / static_cast<double>(s.plain_steps) * 1e3 : 0.0)
              << " ms each); " << s.accepted << " of " << s.drafted << " drafts accepted";
    for (const auto& [name, by] : s.by_source) std::cout << "; " << name << " " << by.accepted << "/" << by.drafted;
    std::cout << "\n";
}

constexpr const char* kChatContextAdvice = "/reset starts over, --context raises it";

// "/save FILE" -> "FILE" for `command` "/save"; nullopt when `message` is another command.
std::optional<std::string> argument_of(const std::string& message, std::string_view command) {
    if (!message.starts_with(command)) return std::nullopt;
    const std::string rest = message.substr(command.size());
    if (!rest.empty() && rest[0] != ' ' && rest[0] != '\t') return std::nullopt;
    return trimmed(rest);
}

// The file a /save or /load names, else the --session file; nullopt (said why) without either.
std::optional<std::string> session_file_for(const std::string& argument, const ChatOptions& options, const char* command) {
    if (!argument.empty()) return argument;
    if (options.session_file) return *options.session_file;
    std::cout << "usage: " << command << " FILE (there is no --session file to default to)\n";
    return std::nullopt;
}

void save_command(ChatStack& stack, const ChatOptions& options, const std::string& argument) {
    const auto path = session_file_for(argument, options, "/save");
    if (!path) return;
    auto saved = save_chat_session(stack, *path);
    if (!saved) {
        std::cerr << "stormo: /save: " << saved.error().message << std::endl;
        return;
    }
    std::cout << "(saved " << *path << ": " << saved->messages << " messages, " << describe(*saved) << ")\n";
}

void load_command(ChatStack& stack, const ChatOptions& options, const std::string& argument, size_t& turns) {
    const auto path = session_file_for(argument, options, "/load");
    if (!path) return;
    auto loaded = load_chat_session(stack, *path);
    if (!loaded) {
        std::cerr << "stormo: /load: " << loaded.error().message << "; the conversation is as it was" << std::endl;
        return;
    }
    turns = 0;
    std::cout << "(loaded " << *path << ": " << loaded->messages << " messages, " << describe(*loaded) << ")\n";
}

}  // namespace

int run_chat(int argc, char** argv) {
    CommonOptions common;
    common.takes_ranks = true;  // every rank of an mpirun takes part (docs/distributed.md)
    ChatOptions chat;
    po::options_description d("chat options");
    add_chat_options(d, chat);
    d.add(common_options(common));
    auto parsed = parse_command_line(argc, argv, "chat", "MODEL [options]",
                                     "An interactive conversation with the model, one message per line.\n" +
                                         std::string(kChatHelp),
                                     d, {"model"});
    if (!parsed) return report_usage_error("chat", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if (auto ok = check_chat_options(chat); !ok) return report_usage_error("chat", ok.error());
    if (const auto served = serve_experts_as_rank("chat", common)) return *served;  // a rank > 0: rank 0 reads the turns

    auto opened = open_chat(common, chat, ChatUse{std::nullopt, kChatContextAdvice});
    if (!opened) return report_error("chat", opened.error());
    ChatStack& stack = **opened;
    if (auto resumed = resume_chat_session(stack, chat); !resumed) return report_error("chat", resumed.error());
    const bool interactive = isatty(STDIN_FILENO);
    if (interactive) std::cout << kChatHelp << std::flush;

    SigintFlag interrupted;
    LineReader input(STDIN_FILENO, interrupted.flag(), kMaxMessageBytes);
    size_t turns = 0;
    StatsBase stats_base = StatsBase::now(*stack.loaded.engine);
    for (;;) {
        if (interactive) std::cout << "> " << std::flush;
        std::string line;
        const auto status = input.next(line);
        if (status == LineReader::Status::end) break;
        if (status == LineReader::Status::too_long) {
            std::cerr << "stormo: the line is too long: " << input.too_long_bytes() << " bytes, the limit is "
                      << kMaxMessageBytes << " (" << format_bytes(kMaxMessageBytes)
                      << "); it was skipped and the conversation is as it was" << std::endl;
            continue;
        }
        if (status == LineReader::Status::interrupted) {
            interrupted.clear();
            std::cout << "\n(Ctrl-C stops an answer; Ctrl-D or /quit leaves)\n";
            continue;
        }
        const std::string message = trimmed(line);
        if (message.empty()) continue;
        if (message == "/quit" || message == "/exit") break;
        if (message == "/help") {
            std::cout << kChatHelp;
            continue;
        }
        if (message == "/reset") {
            stack.conversation->reset();
            turns = 0;
            stats_base = StatsBase::now(*stack.loaded.engine);
            std::cout << "(new conversation)\n";
            continue;
        }
        if (message == "/stats") {
            print_stats(stack, turns, stats_base);
            continue;
        }
        if (const auto file = argument_of(message, "/save")) {
            save_command(stack, chat, *file);
            continue;
        }
        if (const auto file = argument_of(message, "/load")) {
            load_command(stack, chat, *file, turns);
            continue;
        }
        if (message[0] == '/') {
            std::cout << "unknown command " << message << " (/help lists them)\n";
            continue;
        }
        ReplyPrinter printer(chat.show_reasoning);
        auto turn = stack.conversation->ask(message, [&](const text::ReplyPiece& p) { printer.print(p); },
                                            &interrupted.flag());
        printer.finish();
        interrupted.clear();
        if (!turn) {
            // A lost rank (docs/distributed.md) ends the run: no later turn could be answered.
            if (turn.error().kind == ErrorKind::peer_lost) return report_error("chat", turn.error());
            // The conversation is as it was before this message.
            std::cerr << "stormo: " << turn.error().message << std::endl;
            continue;
        }
        ++turns;
        stats_base.speculation.add(turn->generation.speculation);
        std::cerr << "stormo: " << turn_speed(*turn, kChatContextAdvice) << std::endl;
        // After each answered turn; a stopped answer is not saved, so the file keeps the last whole turn.
        if (chat.session_file && turn->generation.reason != StopReason::cancelled) {
            if (auto saved = save_chat_session(stack, *chat.session_file); !saved)
                std::cerr << "stormo: --session: " << saved.error().message << std::endl;
        }
    }
    if (interactive) std::cout << "\n";
    return 0;
}

}  // namespace stormo::cli
