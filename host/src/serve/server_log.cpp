#include "serve/server_log.hpp"

#include <cstdio>
#include <ctime>

#include "jinja/chat_value.hpp"

namespace stormo::serve {
namespace {

using text::Value;

// UTC with milliseconds, as ISO 8601 writes it: 2026-12-04T11:20:58.123Z.
std::string iso_time(std::chrono::system_clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char buf[80];  // room for any int the fields could hold, which the compiler checks
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                  utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

// Milliseconds with a tenth: enough to tell a cache hit from a miss, short to read.
double milliseconds(double seconds) { return static_cast<double>(static_cast<int64_t>(seconds * 1e4 + 0.5)) / 10.0; }

std::string fixed_ms(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", milliseconds(seconds));
    return buf;
}

}  // namespace

Expected<LogFormat> parse_log_format(std::string_view name) {
    if (name == "text") return LogFormat::text;
    if (name == "json") return LogFormat::json;
    return fail(ErrorKind::invalid_argument, "--log-format must be text or json, not \"" + std::string(name) + "\"");
}

ServerLog::ServerLog(LogFormat format, std::ostream& out) : format_(format), out_(&out) {}

std::string ServerLog::note_line(std::string_view message, std::string_view level,
                                 std::chrono::system_clock::time_point now) const {
    if (format_ == LogFormat::text) return "stormo: " + std::string(message);
    return text::to_json(Value::object({{"time", Value(iso_time(now))},
                                        {"level", Value(std::string(level))},
                                        {"message", Value(std::string(message))}}));
}

std::string ServerLog::request_line(const RequestRecord& r, std::chrono::system_clock::time_point now) const {
    if (format_ == LogFormat::text) {
        std::string line = "stormo: " + r.method + " " + r.route + " " + std::to_string(r.status);
        line += " prompt_tokens=" + std::to_string(r.prompt_tokens) + " completion_tokens=" + std::to_string(r.completion_tokens);
        line += " first_token_ms=" + (r.first_token_seconds ? fixed_ms(*r.first_token_seconds) : std::string("-"));
        line += " total_ms=" + fixed_ms(r.total_seconds);
        return line;
    }
    return text::to_json(Value::object(
        {{"time", Value(iso_time(now))},
         {"level", Value("info")},
         {"message", Value("request")},
         {"method", Value(r.method)},
         {"route", Value(r.route)},
         {"status", Value(static_cast<int64_t>(r.status))},
         {"prompt_tokens", Value(static_cast<int64_t>(r.prompt_tokens))},
         {"completion_tokens", Value(static_cast<int64_t>(r.completion_tokens))},
         {"first_token_ms", r.first_token_seconds ? Value(milliseconds(*r.first_token_seconds)) : Value()},
         {"total_ms", Value(milliseconds(r.total_seconds))}}));
}

void ServerLog::note(std::string_view message, std::string_view level) {
    write(note_line(message, level, std::chrono::system_clock::now()));
}

void ServerLog::request(const RequestRecord& record) { write(request_line(record, std::chrono::system_clock::now())); }

void ServerLog::write(const std::string& line) {
    std::lock_guard lock(mutex_);
    *out_ << line << std::endl;
}

}  // namespace stormo::serve
