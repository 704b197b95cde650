// stormo cache-sim: replays route traces through the expert store's eviction policies, to choose
// the default policy and the hotness decay by measurement.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/json_writer.hpp"
#include "cli/options.hpp"
#include "store/eviction.hpp"
#include "util/file.hpp"

namespace stormo::cli {
namespace {

// The traces one after another; each a regular file of bounded size, validated line by line.
Expected<std::vector<RouteStep>> read_traces(const std::vector<std::string>& paths) {
    std::vector<RouteStep> trace;
    for (const auto& path : paths) {
        auto text = read_file(path, kTraceReadCap, "a route trace");
        if (!text) return tl::unexpected(with_context(text.error(), "--trace"));
        STORMO_TRY_ASSIGN(auto steps, parse_route_trace(*text, path));
        trace.insert(trace.end(), steps.begin(), steps.end());
    }
    return trace;
}

// The table the policies keep has an entry per (layer, expert) pair: bounded far above real
// models (the largest have about 50K pairs), so a stray id cannot allocate gigabytes.
constexpr int64_t kMaxPairs = int64_t{1} << 20;

struct TraceShape {
    int layers = 0;
    int experts = 0;
    int64_t pairs() const { return int64_t{layers} * int64_t{std::max(experts, 1)}; }
};

TraceShape shape_of(const std::vector<RouteStep>& trace) {
    TraceShape shape;
    for (const auto& step : trace) {
        shape.layers = std::max(shape.layers, step.layer + 1);
        for (int32_t e : step.experts) shape.experts = std::max(shape.experts, e + 1);
    }
    return shape;
}

// More slots than the trace has (layer, expert) pairs cannot change a hit rate; refusing them keeps
// a typo like --slots 10000000000 from allocating gigabytes.
Expected<void> check_slots_against(const TraceShape& shape, const std::vector<int64_t>& slot_counts) {
    if (shape.pairs() > kMaxPairs)
        return fail(ErrorKind::invalid_argument, "--trace: " + std::to_string(shape.layers) + " layers x " +
                                                     std::to_string(shape.experts) + " experts, more than the " +
                                                     std::to_string(kMaxPairs) + " (layer, expert) pairs cache-sim simulates");
    for (int64_t slots : slot_counts)
        if (slots > shape.pairs())
            return fail(ErrorKind::invalid_argument,
                        "--slots " + std::to_string(slots) + ": more than the " + std::to_string(shape.pairs()) +
                            " (layer, expert) pairs of the trace (" + std::to_string(shape.layers) + " layers x " +
                            std::to_string(shape.experts) + " experts)");
    return {};
}

std::string decay_text(double decay) {
    std::ostringstream s;
    s << decay;
    return s.str();
}

}  // namespace

int run_cache_sim(int argc, char** argv) {
    std::vector<std::string> traces;
    std::vector<int64_t> slot_counts;
    std::vector<double> decays{0.5, 0.8, 0.9, 0.95, 0.99};
    std::vector<std::string> margin_texts{"off", "0.25"};
    bool json = false;
    po::options_description d("cache-sim options");
    d.add_options()
        ("trace", po::value<std::vector<std::string>>(&traces)->value_name("FILE")->required()->composing(),
         "a route trace written by `stormo generate --route-trace` (repeatable: replayed one after another)")
        ("slots", po::value<std::vector<int64_t>>(&slot_counts)->value_name("N")->required()->composing(),
         "slots to simulate (repeatable)")
        ("decay", po::value<std::vector<double>>(&decays)->value_name("D")->composing(),
         "hotness decays per layer step to compare (repeatable; default 0.5 0.8 0.9 0.95 0.99)")
        ("margin", po::value<std::vector<std::string>>(&margin_texts)->value_name("M")->composing(),
         "hotness margins to compare, each with every decay: a number from 0 to 100, or off (repeatable; "
         "default off 0.25)")
        ("json", po::bool_switch(&json), "one JSON object");
    auto parsed = parse_command_line(argc, argv, "cache-sim", "--trace FILE --slots N [--slots N ...] [options]",
                                     "Hit rates of LRU and hotness eviction replayed over recorded routes.", d);
    if (!parsed) return report_usage_error("cache-sim", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;

    for (double decay : decays)
        if (!(decay > 0.0 && decay <= 1.0))
            return report_usage_error("cache-sim", Error{ErrorKind::invalid_argument,
                                                         "--decay " + decay_text(decay) + ": must be in (0, 1]"});
    std::vector<double> margins;
    for (const std::string& text : margin_texts) {
        const std::optional<double> margin = hotness_margin_from_text(text);
        if (!margin)
            return report_usage_error("cache-sim", Error{ErrorKind::invalid_argument,
                                                         "--margin " + text + ": must be off or a number from 0 to 100"});
        margins.push_back(*margin);
    }
    for (int64_t slots : slot_counts)
        if (slots <= 0)
            return report_usage_error("cache-sim", Error{ErrorKind::invalid_argument,
                                                         "--slots " + std::to_string(slots) + ": must be a positive integer"});

    auto trace = read_traces(traces);
    if (!trace) return report_error("cache-sim", trace.error());
    if (trace->empty()) return report_error("cache-sim", Error{ErrorKind::invalid_argument, "--trace: no route steps"});
    const TraceShape shape = shape_of(*trace);
    if (auto checked = check_slots_against(shape, slot_counts); !checked)
        return report_usage_error("cache-sim", checked.error());
    const int n_layers = shape.layers, n_experts = shape.experts;

    JsonWriter w;
    w.begin_object().field("steps", trace->size()).field("layers", n_layers).field("experts", n_experts);
    w.key("results").begin_array();
    if (!json)
        std::cout << trace->size() << " steps, " << n_layers << " layers, " << n_experts << " experts\n"
                  << "slots   policy                hit rate\n";
    for (int64_t slots : slot_counts) {
        auto report = [&](const std::string& name, const EvictionSettings& s) {
            const CacheSimulation sim = simulate_cache(*trace, static_cast<size_t>(slots), s, n_layers, n_experts);
            w.begin_object().field("slots", slots).field("policy", name).field("hit_rate", sim.hit_rate())
                .field("hits", sim.hits).field("misses", sim.misses).end_object();
            if (!json)
                std::cout << std::left << std::setw(8) << slots << std::setw(22) << name << std::fixed << std::setprecision(4)
                          << sim.hit_rate() << "\n";
        };
        report("lru", EvictionSettings{EvictionPolicy::lru, 0.0, -1.0});
        for (double margin : margins)
            for (double decay : decays) {
                std::ostringstream name;
                name << "hotness@" << decay;
                if (margin >= 0.0) name << "/m" << margin;
                report(name.str(), EvictionSettings{EvictionPolicy::hotness, decay, margin});
            }
    }
    w.end_array().end_object();
    if (json) std::cout << w.str() << "\n";
    return 0;
}

}  // namespace stormo::cli
