#include "pipe/pipe_protocol.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace stormo::pipe {
namespace {

// Splits on runs of spaces and tabs (a trailing '\r' from a CRLF client counts as a space).
std::vector<std::string_view> words_of(std::string_view line) {
    std::vector<std::string_view> words;
    size_t i = 0;
    auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
    while (i < line.size()) {
        while (i < line.size() && is_space(line[i])) ++i;
        const size_t start = i;
        while (i < line.size() && !is_space(line[i])) ++i;
        if (i > start) words.push_back(line.substr(start, i - start));
    }
    return words;
}

LineError bad(std::string message) { return LineError{"bad_request", std::move(message)}; }

template <typename T>
bool parse_number(std::string_view word, T& out) {
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), out);
    return ec == std::errc() && end == word.data() + word.size();
}

// A count or id: digits only, at most `limit`.
std::variant<uint64_t, LineError> whole_number(std::string_view word, const char* field, uint64_t limit) {
    uint64_t value = 0;
    if (!parse_number(word, value)) return bad(std::string(field) + " must be a whole number, got '" + std::string(word) + "'");
    if (value > limit) return bad(std::string(field) + " " + std::string(word) + " is above " + std::to_string(limit));
    return value;
}

// Read as a double: a float parse refuses 1e-300 as out of range, where it is a fine tiny value
// (it rounds to zero or a subnormal); one beyond the float range is refused as such.
std::variant<float, LineError> real_number(std::string_view word, const char* field) {
    double value = 0;
    if (!parse_number(word, value) || !std::isfinite(value))
        return bad(std::string(field) + " must be a finite number, got '" + std::string(word) + "'");
    if (std::fabs(value) > std::numeric_limits<float>::max())
        return bad(std::string(field) + " " + std::string(word) + " is beyond the range of a float");
    return static_cast<float>(value);
}

constexpr uint64_t kMaxCount = std::numeric_limits<int32_t>::max();

std::variant<Command, LineError> parse_turn(std::span<const std::string_view> args) {
    if (args.size() < 6)
        return bad("TURN needs <max_new> <keep> <temp> <top_p> <top_k> <n> <ids...>, got " + std::to_string(args.size()) +
                   " fields");
    TurnCommand turn;
    const char* names[] = {"max_new", "keep"};
    size_t* counts[] = {&turn.max_new, &turn.keep};
    for (int i = 0; i < 2; ++i) {
        auto v = whole_number(args[i], names[i], kMaxCount);
        if (auto* e = std::get_if<LineError>(&v)) return *e;
        *counts[i] = std::get<uint64_t>(v);
    }
    auto temp = real_number(args[2], "temp");
    if (auto* e = std::get_if<LineError>(&temp)) return *e;
    auto top_p = real_number(args[3], "top_p");
    if (auto* e = std::get_if<LineError>(&top_p)) return *e;
    auto top_k = whole_number(args[4], "top_k", kMaxCount);
    if (auto* e = std::get_if<LineError>(&top_k)) return *e;
    auto n = whole_number(args[5], "n", kMaxCount);
    if (auto* e = std::get_if<LineError>(&n)) return *e;
    turn.sampling.temperature = std::get<float>(temp);
    turn.sampling.top_p = std::get<float>(top_p);
    turn.sampling.top_k = static_cast<int>(std::get<uint64_t>(top_k));
    if (turn.sampling.temperature < 0.0f) return LineError{"bad_sampling", "temp must be >= 0 (0: greedy)"};
    if (!(turn.sampling.top_p > 0.0f && turn.sampling.top_p <= 1.0f))
        return LineError{"bad_sampling", "top_p must be in (0, 1] (1: off)"};
    const size_t count = std::get<uint64_t>(n);
    const auto ids = args.subspan(6);
    if (ids.size() != count)
        return bad("n is " + std::to_string(count) + " but " + std::to_string(ids.size()) + " ids follow");
    if (count == 0) return bad("TURN needs at least one id to consume (n is 0)");
    turn.ids.reserve(count);
    for (const auto word : ids) {
        auto id = whole_number(word, "id", kMaxCount);
        if (auto* e = std::get_if<LineError>(&id)) return *e;
        turn.ids.push_back(static_cast<int32_t>(std::get<uint64_t>(id)));
    }
    return Command{std::move(turn)};
}

// SAVE's and LOAD's path: the rest of the line after the verb, without the spaces around it, so a
// path may hold spaces; a control character (a NUL would cut the name short) is refused.
std::variant<Command, LineError> parse_path_command(std::string_view verb, std::string_view rest) {
    const size_t first = rest.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) return bad(std::string(verb) + " needs a path");
    const std::string_view path = rest.substr(first, rest.find_last_not_of(" \t\r") - first + 1);
    for (const char c : path)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            return bad(std::string(verb) + ": the path holds a control character");
    if (verb == "SAVE") return Command{SaveCommand{std::string(path)}};
    return Command{LoadCommand{std::string(path)}};
}

}  // namespace

std::variant<Command, LineError> parse_line(std::string_view line) {
    const auto words = words_of(line);
    if (words.empty()) return bad("empty line");
    const std::string_view verb = words.front();
    const auto args = std::span<const std::string_view>(words).subspan(1);
    if (verb == "TURN") return parse_turn(args);
    if (verb == "SAVE" || verb == "LOAD") return parse_path_command(verb, line.substr(static_cast<size_t>(verb.data() - line.data()) + verb.size()));
    if (verb == "RESET" || verb == "SHUTDOWN") {
        if (!args.empty()) return bad(std::string(verb) + " takes no arguments");
        return verb == "RESET" ? Command{ResetCommand{}} : Command{ShutdownCommand{}};
    }
    std::string shown(verb.substr(0, 32));
    for (char& c : shown)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    return LineError{"unknown_command", "unknown command '" + shown + "' (expected TURN, RESET, SAVE, LOAD or SHUTDOWN)"};
}

// Lines are built by appending: GCC 12 warns falsely (-Wrestrict) on chains of operator+.
std::string ready_line(size_t context, size_t vocab, std::span<const int32_t> stop_ids) {
    std::string line = "READY ";
    line.append(std::to_string(context)).append(" ").append(std::to_string(vocab));
    for (const int32_t id : stop_ids) line.append(" ").append(std::to_string(id));
    return line;
}

std::string token_line(int32_t id) { return std::string("TOKEN ").append(std::to_string(id)); }

std::string done_line(DoneReason reason, size_t n_out, size_t position) {
    const char* name = reason == DoneReason::stop ? "STOP" : reason == DoneReason::max_tokens ? "MAX_TOKENS" : "CONTEXT_FULL";
    std::string line = "DONE ";
    line.append(name).append(" ").append(std::to_string(n_out)).append(" ").append(std::to_string(position));
    return line;
}

std::string saved_line(size_t position, uint64_t bytes) {
    std::string line = "SAVED ";
    line.append(std::to_string(position)).append(" ").append(std::to_string(bytes));
    return line;
}

std::string loaded_line(size_t position) { return std::string("LOADED ").append(std::to_string(position)); }

std::string error_line(std::string_view code, bool fatal, std::string_view message) {
    std::string line = "ERROR ";
    line.append(code).append(fatal ? " 1 " : " 0 ");
    for (const char c : message) line += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    return line;
}

}  // namespace stormo::pipe
