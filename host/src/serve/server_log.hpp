#pragma once
// What `stormo serve` writes on stderr while it runs: its notes (listening, ready, the prompt
// cache's troubles, stopped) and one line per request answered, as text for a person or, with
// --log-format json, one JSON object per line for a log collector. Lines from several
// connections never interleave.
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "stormo/error.hpp"

namespace stormo::serve {

enum class LogFormat { text, json };
// "text" or "json"; anything else is an error naming --log-format.
Expected<LogFormat> parse_log_format(std::string_view name);

// One request as its log line tells it.
struct RequestRecord {
    std::string method;
    std::string route;  // the path, without its query
    int status = 0;     // what was sent (0: nothing, the client left first)
    size_t prompt_tokens = 0;
    size_t completion_tokens = 0;
    std::optional<double> first_token_seconds;  // from the request's arrival; none without a token
    double total_seconds = 0.0;
};

class ServerLog {
public:
    explicit ServerLog(LogFormat format, std::ostream& out);
    LogFormat format() const { return format_; }

    // A note about the server: "stormo: TEXT", or {"time", "level", "message"}.
    void note(std::string_view message, std::string_view level = "info");
    void request(const RequestRecord& record);

    // The line each writes, without its newline (for tests). `now`: the time it carries (json).
    std::string note_line(std::string_view message, std::string_view level, std::chrono::system_clock::time_point now) const;
    std::string request_line(const RequestRecord& record, std::chrono::system_clock::time_point now) const;

private:
    void write(const std::string& line);

    LogFormat format_;
    std::ostream* out_;
    std::mutex mutex_;
};

}  // namespace stormo::serve
