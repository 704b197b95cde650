// stormo cache-sim: replays route traces (recorded, or generated with stated locality) through the
// expert store's eviction policies and Belady's optimum, to choose the default policy by
// measurement (docs/expert_store.md).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "util/json_writer.hpp"
#include "cli/options.hpp"
#include "runtime/trace_routing.hpp"
#include "store/cache_simulation.hpp"
#include "tools/synthetic_routes.hpp"
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

std::string number_text(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}

struct NamedPolicy {
    std::string name;
    EvictionSettings settings;
};

// The policies asked for by name, the hotness ones at every decay and margin asked for.
Expected<std::vector<NamedPolicy>> policies_named(const std::vector<std::string>& names, const std::vector<double>& decays,
                                                  const std::vector<double>& margins, bool& with_belady) {
    std::vector<NamedPolicy> out;
    with_belady = false;
    for (const std::string& name : names) {
        if (name == "belady") {
            with_belady = true;
        } else if (name == "lru") {
            out.push_back({"lru", EvictionSettings{EvictionPolicy::lru, 0.0, -1.0}});
        } else if (name == "lfu") {  // hotness that never forgets: use counts, ties least recently used
            out.push_back({"lfu", EvictionSettings{EvictionPolicy::hotness, 1.0, -1.0}});
        } else if (name == "hotness" || name == "next-use" || name == "adaptive") {
            const EvictionPolicy policy = *eviction_policy_from_text(name);
            for (double margin : margins)
                for (double decay : decays) {
                    std::ostringstream label;
                    label << name << "@" << decay;
                    if (margin >= 0.0) label << "/m" << margin;
                    out.push_back({label.str(), EvictionSettings{policy, decay, margin}});
                }
        } else {
            return fail(ErrorKind::invalid_argument, "--policy " + name + ": the policies are lru, lfu, hotness, next-use, adaptive and belady");
        }
    }
    return out;
}

}  // namespace

int run_cache_sim(int argc, char** argv) {
    std::vector<std::string> traces;
    std::string synthetic;
    std::vector<int64_t> slot_counts;
    std::vector<double> budget_shares;
    std::vector<std::string> policy_names{"belady", "lru", "lfu", "hotness", "next-use", "adaptive"};
    std::vector<double> decays{0.95};
    std::vector<std::string> margin_texts{"0.25"};
    bool prefetch = false, figures = false, json = false;
    int64_t streams_given = -1;  // -1: not given, the trace as it is
    std::string write_trace;
    po::options_description d("cache-sim options");
    d.add_options()
        ("trace", po::value<std::vector<std::string>>(&traces)->value_name("FILE")->composing(),
         "a route trace written by `stormo generate --route-trace` (repeatable: replayed one after another)")
        ("synthetic", po::value<std::string>(&synthetic)->value_name("SPEC"),
         "instead of --trace, a generated trace: published, or key=value pairs (layers, experts, top-k, tokens, seed, "
         "zipf, reuse, drift, recall) over the published preset, as `bench --routing synthetic:SPEC` takes them")
        ("slots", po::value<std::vector<int64_t>>(&slot_counts)->value_name("N")->composing(), "slots to simulate (repeatable)")
        ("budget-share", po::value<std::vector<double>>(&budget_shares)->value_name("PERCENT")->composing(),
         "slots as a share of the trace's (layer, expert) pairs (repeatable; without --slots the default is 10 20 30 40 50)")
        ("policy", po::value<std::vector<std::string>>(&policy_names)->value_name("NAME")->composing(),
         "lru, lfu, hotness, next-use, adaptive or belady (repeatable; default all)")
        ("decay", po::value<std::vector<double>>(&decays)->value_name("D")->composing(),
         "decays per layer step of hotness and next-use, and adaptive's slow one (repeatable; default 0.95)")
        ("margin", po::value<std::vector<std::string>>(&margin_texts)->value_name("M")->composing(),
         "margins of hotness and next-use, each with every decay: a number from 0 to 100, or off (repeatable; default 0.25)")
        ("streams", po::value<int64_t>(&streams_given)->value_name("N"),
         "N sequences decoding together, as `bench --parallel N --routing` routes them: each of the trace's one-row "
         "passes becomes a token of every sequence, each from a place of its own, a step the union of their experts (1: the "
         "trace's passes alone, the same way; without it the trace as it is)")
        ("prefetch", po::bool_switch(&prefetch), "also replay each policy reading ahead the trace's predictions, as the store does")
        ("figures", po::bool_switch(&figures), "print the trace's locality figures next to the published ones (always for --synthetic)")
        ("write-trace", po::value<std::string>(&write_trace)->value_name("FILE"), "write the replayed trace to FILE (version 2)")
        ("json", po::bool_switch(&json), "one JSON object");
    auto parsed = parse_command_line(argc, argv, "cache-sim", "(--trace FILE ... | --synthetic SPEC) [--slots N ... | --budget-share P ...] [options]",
                                     "Hit rates of the eviction policies and Belady's optimum replayed over routes.", d);
    if (!parsed) return report_usage_error("cache-sim", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    auto usage = [](const std::string& m) { return report_usage_error("cache-sim", Error{ErrorKind::invalid_argument, m}); };

    if (traces.empty() == synthetic.empty()) return usage("give --trace FILE or --synthetic SPEC (one of them)");
    for (double decay : decays)
        if (!(decay > 0.0 && decay <= 1.0)) return usage("--decay " + number_text(decay) + ": must be in (0, 1]");
    std::vector<double> margins;
    for (const std::string& text : margin_texts) {
        const std::optional<double> margin = hotness_margin_from_text(text);
        if (!margin) return usage("--margin " + text + ": must be off or a number from 0 to 100");
        margins.push_back(*margin);
    }
    if (streams_given != -1 && (streams_given < 1 || streams_given > static_cast<int64_t>(kMaxStreams)))
        return usage("--streams " + std::to_string(streams_given) + ": must be from 1 to " + std::to_string(kMaxStreams));
    const size_t streams = streams_given > 0 ? static_cast<size_t>(streams_given) : 0;  // 0: the trace as it is
    for (int64_t slots : slot_counts)
        if (slots <= 0) return usage("--slots " + std::to_string(slots) + ": must be a positive integer");
    for (double share : budget_shares)
        if (!(share > 0.0 && share <= 100.0)) return usage("--budget-share " + number_text(share) + ": must be in (0, 100]");
    if (slot_counts.empty() && budget_shares.empty()) budget_shares = {10, 20, 30, 40, 50};
    bool with_belady = false;
    auto policies = policies_named(policy_names, decays, margins, with_belady);
    if (!policies) return report_usage_error("cache-sim", policies.error());

    std::vector<RouteStep> trace;
    std::vector<std::vector<float>> next_draw;  // synthetic routes: the generator's odds, for the informed policy
    if (!synthetic.empty()) {
        auto spec = parse_synthetic_routing(synthetic == "published" ? std::string_view() : std::string_view(synthetic),
                                            published_routing_preset());
        if (!spec) return report_usage_error("cache-sim", with_context(spec.error(), "--synthetic"));
        auto generated = generate_routes(*spec, &next_draw);
        if (!generated) return report_error("cache-sim", with_context(generated.error(), "--synthetic"));
        trace = std::move(*generated);
        figures = true;
        if (!json) std::cout << describe(*spec) << "\n";
    } else {
        auto read = read_traces(traces);
        if (!read) return report_error("cache-sim", read.error());
        trace = std::move(*read);
    }
    if (trace.empty()) {
        std::string files;
        for (const std::string& t : traces) files += (files.empty() ? "" : ", ") + t;
        return report_error("cache-sim", Error{ErrorKind::invalid_argument, "--trace " + files + ": no route steps"});
    }
    // The locality figures are the one-row trace's, measured before any batching.
    std::optional<RouteFigures> own_figures;
    if (figures) own_figures = measure_routes(trace, shape_of(trace).experts, kFigureWindow);
    if (streams > 0) {
        auto batched = batched_route_trace(trace, streams);
        if (!batched) return report_usage_error("cache-sim", batched.error());
        trace = std::move(*batched);
        // The generator's odds are one sequence's: no informed policy for several.
        if (streams > 1) next_draw.clear();
    }
    const TraceShape shape = shape_of(trace);
    // With --streams: the tokens generated (each layer's step serves one token of every sequence).
    const double tokens_generated =
        streams > 0 ? static_cast<double>(trace.size()) / std::max(1, shape.layers) * static_cast<double>(streams) : 0.0;
    for (double share : budget_shares)
        slot_counts.push_back(std::max<int64_t>(1, std::llround(static_cast<double>(shape.pairs()) * share / 100.0)));
    if (auto checked = check_slots_against(shape, slot_counts); !checked)
        return report_usage_error("cache-sim", checked.error());
    if (!write_trace.empty())
        if (auto w = write_file(write_trace, format_route_trace(trace)); !w)
            return report_error("cache-sim", with_context(w.error(), "--write-trace"));
    const int n_layers = shape.layers, n_experts = shape.experts;
    const PredictionAccuracy accuracy = prediction_accuracy(trace);
    if (prefetch && accuracy.steps == 0)
        return usage("--prefetch: the trace carries no predictions (a version 1 trace, or recorded without a streaming store)");

    JsonWriter w;
    w.begin_object().field("steps", trace.size()).field("layers", n_layers).field("experts", n_experts);
    w.field("prediction_steps", accuracy.steps).field("prediction_recall", accuracy.recall())
        .field("prediction_precision", accuracy.precision());
    if (streams > 0) w.field("streams", streams).field("tokens_generated", tokens_generated);
    if (own_figures) {
        const RouteFigures& f = *own_figures;
        w.key("figures").begin_object().field("consecutive_share", f.consecutive_share).field("top_half_share", f.top_half_share)
            .field("gini", f.gini).field("hot_list_share", f.hot_list_share).field("lru_hit_rate", f.lru_hit_rate).end_object();
    }
    w.key("results").begin_array();
    if (!json) {
        std::cout << trace.size() << " steps, " << n_layers << " layers, " << n_experts << " experts\n";
        if (streams > 0)
            std::cout << streams << " sequences decoding together: each step one layer's union for a block of " << streams
                      << " rows, " << tokens_generated << " tokens generated in all\n";
        if (own_figures)
            std::cout << "the trace's figures (one-row steps; the top half and Gini over windows of " << kFigureWindow
                      << " tokens)\n"
                      << figures_table(*own_figures, "  ");
        if (accuracy.steps)
            std::cout << "prefetcher's predictions: " << accuracy.steps << " steps, recall " << std::fixed << std::setprecision(3)
                      << accuracy.recall() << ", precision " << accuracy.precision() << "\n";
        std::cout << "slots   share   policy                hit rate  of belady"
                  << (prefetch ? "   +prefetch  of belady  reads/step" : "") << (streams > 0 ? "  reads/token" : "") << "\n";
    }
    for (int64_t slots : slot_counts) {
        const double share = static_cast<double>(slots) / static_cast<double>(shape.pairs());
        std::optional<CacheSimulation> best;
        if (with_belady) best = simulate_belady(trace, static_cast<size_t>(slots), n_layers, n_experts);
        const std::optional<double> optimum = best ? std::optional(best->hit_rate()) : std::nullopt;
        auto report = [&](const std::string& name, const CacheSimulation& sim, const CacheSimulation* ahead) {
            w.begin_object().field("slots", slots).field("budget_share", share).field("policy", name)
                .field("hit_rate", sim.hit_rate()).field("hits", sim.hits).field("misses", sim.misses);
            if (optimum) w.field("of_belady", *optimum > 0 ? sim.hit_rate() / *optimum : 1.0);
            // A token's reads: its misses, or with the prefetch replay its misses and prefetches.
            const double reads = static_cast<double>(ahead ? ahead->reads() : sim.misses);
            if (streams > 0) w.field("reads_per_token", reads / tokens_generated);
            if (ahead)
                w.field("prefetch_hit_rate", ahead->hit_rate()).field("prefetch_misses", ahead->misses).field("prefetch_issued", ahead->prefetch_issued)
                    .field("prefetch_used", ahead->prefetch_used)
                    .field("prefetch_reads_per_step", static_cast<double>(ahead->reads()) / static_cast<double>(trace.size()));
            w.end_object();
            if (json) return;
            std::cout << std::left << std::setw(8) << slots << std::setw(8) << (std::to_string(std::lround(share * 100)) + "%")
                      << std::setw(22) << name << std::fixed << std::setprecision(4) << std::setw(10) << sim.hit_rate();
            std::cout << std::setw(11) << (optimum ? number_text(std::round(sim.hit_rate() / std::max(*optimum, 1e-12) * 1000) / 1000) : "");
            if (ahead)
                std::cout << std::setw(11) << ahead->hit_rate() << std::setw(11)
                          << (optimum ? number_text(std::round(ahead->hit_rate() / std::max(*optimum, 1e-12) * 1000) / 1000) : "")
                          << std::setw(11) << static_cast<double>(ahead->reads()) / static_cast<double>(trace.size());
            else if (streams > 0 && prefetch)
                std::cout << std::setw(33) << "";
            if (streams > 0) std::cout << reads / tokens_generated;
            std::cout << "\n";
        };
        if (best) report("belady", *best, nullptr);
        if (!next_draw.empty())
            report("informed", simulate_informed(trace, next_draw, static_cast<size_t>(slots), n_layers, n_experts), nullptr);
        for (const NamedPolicy& p : *policies) {
            const CacheSimulation sim = simulate_cache(trace, static_cast<size_t>(slots), p.settings, n_layers, n_experts);
            std::optional<CacheSimulation> ahead;
            if (prefetch) ahead = simulate_cache(trace, static_cast<size_t>(slots), p.settings, n_layers, n_experts, true);
            report(p.name, sim, ahead ? &*ahead : nullptr);
        }
    }
    w.end_array().end_object();
    if (json) std::cout << w.str() << "\n";
    return 0;
}

}  // namespace stormo::cli
