// stormo cache-sim: replays route traces through the expert store's eviction policies, to choose
// the default policy and the hotness decay by measurement.
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/json_writer.hpp"
#include "cli/options.hpp"
#include "store/eviction.hpp"

namespace stormo::cli {

int run_cache_sim(int argc, char** argv) {
    std::vector<std::string> traces;
    std::vector<size_t> slot_counts;
    std::vector<double> decays{0.5, 0.8, 0.9, 0.95, 0.99};
    bool json = false;
    po::options_description d("cache-sim options");
    d.add_options()
        ("trace", po::value<std::vector<std::string>>(&traces)->value_name("FILE")->required()->composing(),
         "a route trace written by `stormo generate --route-trace` (repeatable: replayed one after another)")
        ("slots", po::value<std::vector<size_t>>(&slot_counts)->value_name("N")->required()->composing(),
         "slots to simulate (repeatable)")
        ("decay", po::value<std::vector<double>>(&decays)->value_name("D")->composing(),
         "hotness decays per layer step to compare (repeatable; default 0.5 0.8 0.9 0.95 0.99)")
        ("json", po::bool_switch(&json), "one JSON object");
    auto parsed = parse_command_line(argc, argv, "cache-sim", "--trace FILE --slots N [--slots N ...] [options]",
                                     "Hit rates of LRU and hotness eviction replayed over recorded routes.", d);
    if (!parsed) return report_usage_error("cache-sim", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;

    std::vector<RouteStep> trace;
    for (const auto& path : traces) {
        std::ifstream in(path);
        if (!in) return report_error(Error{ErrorKind::io, "--trace " + path + ": cannot be read"});
        std::stringstream ss;
        ss << in.rdbuf();
        auto steps = parse_route_trace(ss.str(), path);
        if (!steps) return report_error(steps.error());
        trace.insert(trace.end(), steps->begin(), steps->end());
    }
    int n_layers = 0, n_experts = 0;
    for (const auto& step : trace) {
        n_layers = std::max(n_layers, step.layer + 1);
        for (int32_t e : step.experts) n_experts = std::max(n_experts, e + 1);
    }
    if (trace.empty()) return report_error(Error{ErrorKind::invalid_argument, "--trace: no route steps"});

    JsonWriter w;
    w.begin_object().field("steps", trace.size()).field("layers", n_layers).field("experts", n_experts);
    w.key("results").begin_array();
    if (!json)
        std::cout << trace.size() << " steps, " << n_layers << " layers, " << n_experts << " experts\n"
                  << "slots   policy          hit rate\n";
    for (size_t slots : slot_counts) {
        auto report = [&](const std::string& name, const EvictionSettings& s) {
            const CacheSimulation sim = simulate_cache(trace, slots, s, n_layers, n_experts);
            w.begin_object().field("slots", slots).field("policy", name).field("hit_rate", sim.hit_rate())
                .field("hits", sim.hits).field("misses", sim.misses).end_object();
            if (!json)
                std::cout << std::left << std::setw(8) << slots << std::setw(16) << name << std::fixed << std::setprecision(4)
                          << sim.hit_rate() << "\n";
        };
        report("lru", EvictionSettings{EvictionPolicy::lru, 0.0});
        for (double decay : decays) {
            std::ostringstream name;
            name << "hotness@" << decay;
            report(name.str(), EvictionSettings{EvictionPolicy::hotness, decay});
        }
    }
    w.end_array().end_object();
    if (json) std::cout << w.str() << "\n";
    return 0;
}

}  // namespace stormo::cli
