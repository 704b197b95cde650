#include "tools/synthetic_routes.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <random>
#include <sstream>

namespace stormo {
namespace {

// A double in [0, 1) from the generator's bits (std's distributions differ between libraries; the
// routes of a seed must not).
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
size_t below(std::mt19937_64& rng, size_t n) { return static_cast<size_t>(unit(rng) * static_cast<double>(n)); }

// One layer's experts ranked by a Zipf law (a random ranking per layer), and the working set its
// tokens currently draw from.
class LayerRoutes {
public:
    LayerRoutes(const SyntheticRouting& r, const std::vector<double>& cumulative, std::mt19937_64& rng)
        : cumulative_(cumulative), by_rank_(static_cast<size_t>(r.experts)), rank_of_(static_cast<size_t>(r.experts)) {
        std::iota(by_rank_.begin(), by_rank_.end(), 0);
        std::shuffle(by_rank_.begin(), by_rank_.end(), rng);
        for (size_t rank = 0; rank < by_rank_.size(); ++rank) rank_of_[static_cast<size_t>(by_rank_[rank])] = rank;
        const auto size = static_cast<size_t>(
            std::clamp(static_cast<int>(std::lround(r.working_set * r.top_k)), r.top_k, r.experts));
        while (working_.size() < size) add_to_working_set(rng);
    }
    int32_t draw_working(std::mt19937_64& rng) const { return working_[below(rng, working_.size())]; }
    size_t working_size() const { return working_.size(); }
    const std::vector<int32_t>& working() const { return working_; }
    // The Zipf law's share of expert e: the chance that one draw into the working set picks it.
    double zipf_share(int32_t e) const {
        const size_t rank = rank_of_[static_cast<size_t>(e)];
        return (cumulative_[rank] - (rank ? cumulative_[rank - 1] : 0.0)) / cumulative_.back();
    }
    // One member of the working set leaves, another expert (by the Zipf law) joins.
    void turn_over(std::mt19937_64& rng) {
        if (working_.size() >= by_rank_.size()) return;
        working_.erase(working_.begin() + static_cast<std::ptrdiff_t>(below(rng, working_.size())));
        add_to_working_set(rng);
    }

private:
    void add_to_working_set(std::mt19937_64& rng) {
        for (;;) {
            const double u = unit(rng) * cumulative_.back();
            const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
            const int32_t e = by_rank_[std::min<size_t>(static_cast<size_t>(it - cumulative_.begin()), by_rank_.size() - 1)];
            if (std::find(working_.begin(), working_.end(), e) == working_.end()) {
                working_.push_back(e);
                return;
            }
        }
    }
    const std::vector<double>& cumulative_;
    std::vector<int32_t> by_rank_;
    std::vector<size_t> rank_of_;
    std::vector<int32_t> working_;
};

// The chance that one draw of the layer's next step picks each expert, from the generator's state
// after this step: the reuse share spread over the experts just chosen, the rest over the working
// set, and for an expert outside the set the chance that the next turnover brings it in (it cannot
// be drawn before then: a tie-break among the experts outside, by the Zipf law). What a policy that could see the generator's state, but not its future draws, ranks by.
std::vector<float> next_draw_odds(const SyntheticRouting& r, const LayerRoutes& routes, const std::vector<int32_t>& chosen) {
    std::vector<float> odds(static_cast<size_t>(r.experts), 0.0f);
    const auto working = static_cast<double>(routes.working_size());
    const double joins = r.turnover * working;  // experts joining the set per step
    for (size_t e = 0; e < odds.size(); ++e)
        odds[e] = static_cast<float>((1.0 - r.reuse) * joins * routes.zipf_share(static_cast<int32_t>(e)) / working);
    for (int32_t e : routes.working()) odds[static_cast<size_t>(e)] = static_cast<float>((1.0 - r.reuse) / working);
    for (int32_t e : chosen) odds[static_cast<size_t>(e)] += static_cast<float>(r.reuse / static_cast<double>(chosen.size()));
    return odds;
}

Expected<void> check(const SyntheticRouting& r) {
    auto bad = [](const std::string& m) { return fail(ErrorKind::invalid_argument, "synthetic routing: " + m); };
    if (r.layers < 1 || r.layers > kMaxTraceLayers) return bad("layers must be 1 to " + std::to_string(kMaxTraceLayers));
    if (r.experts < 1 || r.experts > kMaxTraceExperts) return bad("experts must be 1 to " + std::to_string(kMaxTraceExperts));
    if (r.top_k < 1 || r.top_k > r.experts) return bad("top-k must be 1 to the experts (" + std::to_string(r.experts) + ")");
    if (r.tokens < 1 || r.tokens > (size_t{1} << 20)) return bad("tokens must be 1 to 1048576");
    if (!(r.zipf >= 0.0 && r.zipf <= 8.0)) return bad("zipf must be 0 to 8");
    if (!(r.reuse >= 0.0 && r.reuse <= 1.0)) return bad("reuse must be 0 to 1");
    if (!(r.turnover >= 0.0 && r.turnover <= 1.0)) return bad("turnover must be 0 to 1");
    if (!(r.working_set >= 1.0 && r.working_set <= 1e6)) return bad("working-set must be at least 1 (a multiple of top-k)");
    if (!(r.prediction_recall >= 0.0 && r.prediction_recall <= 1.0)) return bad("recall must be 0 to 1");
    return {};
}

bool contains(const std::vector<int32_t>& v, int32_t e) { return std::find(v.begin(), v.end(), e) != v.end(); }

// Each chosen expert with probability `recall`, then other experts until k are named.
std::vector<int32_t> predict(const std::vector<int32_t>& chosen, const SyntheticRouting& r, std::mt19937_64& rng) {
    std::vector<int32_t> guess;
    for (int32_t e : chosen)
        if (unit(rng) < r.prediction_recall) guess.push_back(e);
    while (guess.size() < chosen.size()) {
        const auto e = static_cast<int32_t>(below(rng, static_cast<size_t>(r.experts)));
        if (!contains(chosen, e) && !contains(guess, e)) guess.push_back(e);
    }
    std::sort(guess.begin(), guess.end());
    return guess;
}

Expected<double> number(std::string_view key, std::string_view text) {
    double v = 0.0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
        return fail(ErrorKind::invalid_argument, "synthetic routing: " + std::string(key) + "=" + std::string(text) + " is not a number");
    return v;
}

Expected<int64_t> whole(std::string_view key, std::string_view text) {
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < 0)
        return fail(ErrorKind::invalid_argument,
                    "synthetic routing: " + std::string(key) + "=" + std::string(text) + " is not a whole number");
    return v;
}

}  // namespace

SyntheticRouting published_routing_preset() {
    SyntheticRouting r;
    r.zipf = 0.4;
    r.reuse = 0.1;
    r.working_set = 3.4;
    r.turnover = 0.06;
    r.prediction_recall = 0.89;
    return r;
}

Expected<SyntheticRouting> parse_synthetic_routing(std::string_view spec, const SyntheticRouting& base) {
    if (spec.starts_with("synthetic")) spec.remove_prefix(std::string_view("synthetic").size());
    if (spec.starts_with(":")) spec.remove_prefix(1);
    SyntheticRouting r = published_routing_preset();
    r.layers = base.layers;
    r.experts = base.experts;
    r.top_k = base.top_k;
    r.tokens = base.tokens;
    r.seed = base.seed;
    while (!spec.empty()) {
        const size_t comma = spec.find(',');
        const std::string_view item = spec.substr(0, comma);
        spec.remove_prefix(comma == std::string_view::npos ? spec.size() : comma + 1);
        const size_t eq = item.find('=');
        if (eq == std::string_view::npos)
            return fail(ErrorKind::invalid_argument, "synthetic routing: expected key=value, got \"" + std::string(item) + "\"");
        const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
        if (key == "preset") {
            if (value != "published")
                return fail(ErrorKind::invalid_argument, "synthetic routing: preset=" + std::string(value) + ": the preset is published");
        } else if (key == "zipf") {
            STORMO_TRY_ASSIGN(r.zipf, number(key, value));
        } else if (key == "reuse") {
            STORMO_TRY_ASSIGN(r.reuse, number(key, value));
        } else if (key == "working-set") {
            STORMO_TRY_ASSIGN(r.working_set, number(key, value));
        } else if (key == "turnover") {
            STORMO_TRY_ASSIGN(r.turnover, number(key, value));
        } else if (key == "recall") {
            STORMO_TRY_ASSIGN(r.prediction_recall, number(key, value));
        } else {
            STORMO_TRY_ASSIGN(const int64_t v, whole(key, value));
            const int clamped = static_cast<int>(std::min<int64_t>(v, int64_t{1} << 30));
            if (key == "layers") r.layers = clamped;
            else if (key == "experts") r.experts = clamped;
            else if (key == "top-k") r.top_k = clamped;
            else if (key == "tokens") r.tokens = static_cast<size_t>(clamped);
            else if (key == "seed") r.seed = static_cast<uint64_t>(v);
            else
                return fail(ErrorKind::invalid_argument, "synthetic routing: unknown key \"" + std::string(key) +
                                                             "\" (layers, experts, top-k, tokens, seed, zipf, reuse, working-set, turnover, recall, preset)");
        }
    }
    STORMO_TRY(check(r));
    return r;
}

std::string describe(const SyntheticRouting& r) {
    std::ostringstream s;
    s << "synthetic:layers=" << r.layers << ",experts=" << r.experts << ",top-k=" << r.top_k << ",tokens=" << r.tokens
      << ",seed=" << r.seed << ",zipf=" << r.zipf << ",reuse=" << r.reuse << ",working-set=" << r.working_set << ",turnover=" << r.turnover
      << ",recall=" << r.prediction_recall;
    return s.str();
}

Expected<std::vector<RouteStep>> generate_routes(const SyntheticRouting& r, std::vector<std::vector<float>>* next_draw) {
    STORMO_TRY(check(r));
    if (next_draw) next_draw->clear();
    std::mt19937_64 rng(r.seed);
    std::mt19937_64 guess_rng(r.seed ^ 0x9e3779b97f4a7c15ull);  // apart: the routes do not depend on the recall
    std::vector<double> cumulative(static_cast<size_t>(r.experts));
    double total = 0.0;
    for (size_t rank = 0; rank < cumulative.size(); ++rank)
        cumulative[rank] = total += std::pow(static_cast<double>(rank + 1), -r.zipf);
    std::vector<LayerRoutes> layers;
    for (int l = 0; l < r.layers; ++l) layers.emplace_back(r, cumulative, rng);
    std::vector<std::vector<int32_t>> previous(static_cast<size_t>(r.layers));
    std::vector<RouteStep> trace;
    trace.reserve(r.tokens * static_cast<size_t>(r.layers));
    const auto k = static_cast<size_t>(r.top_k);
    for (size_t t = 0; t < r.tokens; ++t) {
        for (int l = 0; l < r.layers; ++l) {
            LayerRoutes& routes = layers[static_cast<size_t>(l)];
            const std::vector<int32_t>& before = previous[static_cast<size_t>(l)];
            std::vector<int32_t> chosen;
            while (chosen.size() < k) {
                const int32_t e = !before.empty() && unit(rng) < r.reuse ? before[below(rng, before.size())] : routes.draw_working(rng);
                if (!contains(chosen, e)) chosen.push_back(e);
            }
            std::sort(chosen.begin(), chosen.end());
            RouteStep step{l, chosen, 1, predict(chosen, r, guess_rng)};
            trace.push_back(std::move(step));
            // Whole turnovers, then one more with the fraction's probability.
            double turns = r.turnover * static_cast<double>(routes.working_size());
            for (; turns >= 1.0; turns -= 1.0) routes.turn_over(rng);
            if (unit(rng) < turns) routes.turn_over(rng);
            if (next_draw) next_draw->push_back(next_draw_odds(r, routes, chosen));
            previous[static_cast<size_t>(l)] = std::move(chosen);
        }
    }
    return trace;
}

namespace {

double gini_of(std::vector<uint64_t> counts) {
    std::sort(counts.begin(), counts.end());
    const double n = static_cast<double>(counts.size());
    double total = 0.0, weighted = 0.0;
    for (size_t i = 0; i < counts.size(); ++i) {
        total += static_cast<double>(counts[i]);
        weighted += static_cast<double>(i + 1) * static_cast<double>(counts[i]);
    }
    if (total == 0.0 || n < 2) return 0.0;
    return (2.0 * weighted) / (n * total) - (n + 1.0) / n;
}

double top_half_of(std::vector<uint64_t> counts) {
    std::sort(counts.begin(), counts.end(), std::greater<>());
    const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
    const uint64_t top = std::accumulate(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(counts.size() / 2), uint64_t{0});
    return total ? static_cast<double>(top) / static_cast<double>(total) : 0.0;
}

struct Mean {
    double sum = 0.0;
    uint64_t n = 0;
    void add(double v) {
        sum += v;
        ++n;
    }
    double value() const { return n ? sum / static_cast<double>(n) : 0.0; }
};

}  // namespace

RouteFigures measure_routes(std::span<const RouteStep> trace, int experts, size_t window) {
    const TraceShape shape = shape_of(trace);
    const auto n_experts = static_cast<size_t>(std::max(experts, 1));
    std::vector<std::vector<const RouteStep*>> by_layer(static_cast<size_t>(shape.layers));
    for (const RouteStep& step : trace) by_layer[static_cast<size_t>(step.layer)].push_back(&step);
    Mean consecutive, top_half, gini, hot, lru;
    const size_t hot_size = std::max<size_t>(1, n_experts / 16), lru_size = std::max<size_t>(1, n_experts / 4);
    for (const auto& steps : by_layer) {
        if (steps.empty()) continue;
        for (size_t t = 1; t < steps.size(); ++t) {
            size_t shared = 0;
            for (int32_t e : steps[t]->experts) shared += contains(steps[t - 1]->experts, e) ? 1 : 0;
            if (!steps[t]->experts.empty()) consecutive.add(static_cast<double>(shared) / static_cast<double>(steps[t]->experts.size()));
        }
        for (size_t begin = 0; begin + window <= steps.size() || begin == 0; begin += window) {
            std::vector<uint64_t> counts(n_experts, 0);
            for (size_t t = begin; t < std::min(steps.size(), begin + window); ++t)
                for (int32_t e : steps[t]->experts) ++counts[static_cast<size_t>(e)];
            top_half.add(top_half_of(counts));
            gini.add(gini_of(counts));
            if (begin + window >= steps.size()) break;
        }
        // A hot list learned on the first half, applied to the second.
        std::vector<uint64_t> first(n_experts, 0);
        const size_t half = steps.size() / 2;
        for (size_t t = 0; t < half; ++t)
            for (int32_t e : steps[t]->experts) ++first[static_cast<size_t>(e)];
        std::vector<int32_t> order(n_experts);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return first[static_cast<size_t>(a)] > first[static_cast<size_t>(b)]; });
        std::vector<char> listed(n_experts, 0);
        for (size_t i = 0; i < hot_size; ++i) listed[static_cast<size_t>(order[i])] = 1;
        uint64_t covered = 0, asked = 0;
        for (size_t t = half; t < steps.size(); ++t)
            for (int32_t e : steps[t]->experts) {
                ++asked;
                covered += listed[static_cast<size_t>(e)] ? 1 : 0;
            }
        if (asked) hot.add(static_cast<double>(covered) / static_cast<double>(asked));
        // A per-layer LRU.
        std::vector<uint64_t> last_use(n_experts, 0);
        std::vector<int32_t> cached;
        uint64_t tick = 0, hits = 0, requests = 0;
        for (const RouteStep* step : steps)
            for (int32_t e : step->experts) {
                ++requests;
                last_use[static_cast<size_t>(e)] = ++tick;
                if (contains(cached, e)) {
                    ++hits;
                    continue;
                }
                if (cached.size() < lru_size) {
                    cached.push_back(e);
                    continue;
                }
                auto oldest = std::min_element(cached.begin(), cached.end(), [&](int32_t a, int32_t b) {
                    // this step's experts were just used: never the oldest unless all are
                    return last_use[static_cast<size_t>(a)] < last_use[static_cast<size_t>(b)];
                });
                *oldest = e;
            }
        if (requests) lru.add(static_cast<double>(hits) / static_cast<double>(requests));
    }
    return RouteFigures{consecutive.value(), top_half.value(), gini.value(), hot.value(), lru.value()};
}

std::vector<PublishedFigure> published_figures() {
    return {{"experts shared with the previous token", 0.25, 0.44},
            {"selections taken by the top half of experts", 0.78, 0.78},
            {"Gini coefficient of a layer's selections", 0.76, 0.76},
            {"a hot list of 1/16 of the experts covers", 0.10, 0.10},
            {"an LRU of 1/4 of the experts hits", 0.81, 0.81}};
}

std::vector<double> figure_values(const RouteFigures& f) {
    return {f.consecutive_share, f.top_half_share, f.gini, f.hot_list_share, f.lru_hit_rate};
}

std::string figures_table(const RouteFigures& f, std::string_view indent) {
    const std::vector<double> values = figure_values(f);
    const std::vector<PublishedFigure> targets = published_figures();
    std::ostringstream s;
    s << std::fixed << std::setprecision(3);
    for (size_t i = 0; i < targets.size(); ++i) {
        s << indent << std::left << std::setw(46) << targets[i].name << values[i] << "  published " << targets[i].low;
        if (targets[i].high != targets[i].low) s << "-" << targets[i].high;
        s << "\n";
    }
    return s.str();
}

}  // namespace stormo
