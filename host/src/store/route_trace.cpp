#include "store/route_trace.hpp"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "stormo/quote.hpp"

namespace stormo {
namespace {

constexpr std::string_view kHeader = "#stormo-route-trace ";

void append_ids(std::string& out, std::span<const int32_t> ids) {
    for (int32_t e : ids) {
        out += ' ';  // appended apart: g++ 12 warns falsely (-Wrestrict) on " " + std::string
        out += std::to_string(e);
    }
}

void skip_blanks(std::string_view& rest) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t' || rest.front() == '\r')) rest.remove_prefix(1);
}

bool only_blanks(std::string_view s) { return s.find_first_not_of(" \t\r") == std::string_view::npos; }

// The next whitespace-separated number of a trace line in [0, limit), or an error naming the line
// and the value (a number too large for any integer type is out of range, never 0).
Expected<int> trace_number(std::string_view& rest, int limit, const std::string& where, const char* what) {
    skip_blanks(rest);
    size_t end = 0;
    while (end < rest.size() && rest[end] != ' ' && rest[end] != '\t' && rest[end] != '\r') ++end;
    const std::string_view token = rest.substr(0, end);
    rest.remove_prefix(end);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr == token.data() + token.size() && (v < 0 || v >= limit)))
        return fail(ErrorKind::format, where + ": " + what + " " + printable(token) + " is outside 0.." +
                                           std::to_string(limit - 1));
    if (ec != std::errc() || ptr != token.data() + token.size())
        return fail(ErrorKind::format, where + ": expected a number for the " + what + ", got " + quoted_printable(token));
    return static_cast<int>(v);
}

Expected<std::vector<int32_t>> trace_ids(std::string_view part, const std::string& where, const char* what) {
    std::vector<int32_t> ids;
    while (!only_blanks(part)) {
        STORMO_TRY_ASSIGN(const int e, trace_number(part, kMaxTraceExperts, where, what));
        ids.push_back(e);
    }
    return ids;
}

Expected<int> header_version(std::string_view line, const std::string& where) {
    if (!line.starts_with(kHeader))
        return fail(ErrorKind::format, where + ": a line starting with # must be the header \"" + std::string(kHeader) +
                                           "VERSION\", got " + quoted_printable(line));
    line.remove_prefix(kHeader.size());
    STORMO_TRY_ASSIGN(const int version, trace_number(line, kRouteTraceVersion + 1, where, "trace version"));
    if (version < 1 || !only_blanks(line))
        return fail(ErrorKind::format, where + ": route trace versions are 1 to " + std::to_string(kRouteTraceVersion));
    return version;
}

// "layer rows | experts | predicted"
Expected<RouteStep> version2_step(std::string_view line, const std::string& where) {
    const size_t bar1 = line.find('|');
    const size_t bar2 = bar1 == std::string_view::npos ? bar1 : line.find('|', bar1 + 1);
    if (bar2 == std::string_view::npos)
        return fail(ErrorKind::format, where + ": expected \"layer rows | experts | predicted\" (version 2), got " +
                                           quoted_printable(line));
    RouteStep step;
    std::string_view head = line.substr(0, bar1);
    STORMO_TRY_ASSIGN(step.layer, trace_number(head, kMaxTraceLayers, where, "layer"));
    STORMO_TRY_ASSIGN(const int rows, trace_number(head, 1 << 30, where, "row count"));
    if (!only_blanks(head)) return fail(ErrorKind::format, where + ": more than a layer and a row count before the first |");
    step.rows = static_cast<uint32_t>(rows);
    STORMO_TRY_ASSIGN(step.experts, trace_ids(line.substr(bar1 + 1, bar2 - bar1 - 1), where, "expert id"));
    STORMO_TRY_ASSIGN(step.predicted, trace_ids(line.substr(bar2 + 1), where, "predicted expert id"));
    return step;
}

Expected<RouteStep> version1_step(std::string_view line, const std::string& where) {
    RouteStep step;
    STORMO_TRY_ASSIGN(step.layer, trace_number(line, kMaxTraceLayers, where, "layer"));
    STORMO_TRY_ASSIGN(step.experts, trace_ids(line, where, "expert id"));
    return step;
}

}  // namespace

std::string format_route_trace(std::span<const RouteStep> trace) {
    std::string out = std::string(kHeader) + std::to_string(kRouteTraceVersion) + "\n";
    for (const RouteStep& step : trace) {
        out += std::to_string(step.layer);
        out += ' ';
        out += std::to_string(step.rows);
        out += " |";
        append_ids(out, step.experts);
        out += " |";
        append_ids(out, step.predicted);
        out += "\n";
    }
    return out;
}

Expected<std::vector<RouteStep>> parse_route_trace(const std::string& text, const std::string& source_name) {
    std::vector<RouteStep> trace;
    std::string_view all(text);
    size_t number = 0;
    int version = 1;
    while (!all.empty()) {
        const size_t nl = all.find('\n');
        std::string_view line = all.substr(0, nl);
        all.remove_prefix(nl == std::string_view::npos ? all.size() : nl + 1);
        ++number;
        if (only_blanks(line)) continue;
        const std::string where = source_name + ":" + std::to_string(number);
        if (line.front() == '#') {
            STORMO_TRY_ASSIGN(version, header_version(line, where));
            continue;
        }
        STORMO_TRY_ASSIGN(RouteStep step, version == 1 ? version1_step(line, where) : version2_step(line, where));
        trace.push_back(std::move(step));
    }
    return trace;
}

TraceShape shape_of(std::span<const RouteStep> trace) {
    TraceShape shape;
    for (const auto& step : trace) {
        shape.layers = std::max(shape.layers, step.layer + 1);
        for (int32_t e : step.experts) shape.experts = std::max(shape.experts, e + 1);
        for (int32_t e : step.predicted) shape.experts = std::max(shape.experts, e + 1);
    }
    return shape;
}

}  // namespace stormo
