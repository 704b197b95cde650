#include "store/eviction.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "stormo/quote.hpp"

namespace stormo {
namespace {

size_t key(int layer, int expert, int n_experts) {
    return static_cast<size_t>(layer) * static_cast<size_t>(n_experts) + static_cast<size_t>(expert);
}

class LruEviction final : public Eviction {
public:
    LruEviction(int n_layers, int n_experts)
        : n_experts_(n_experts), last_use_(static_cast<size_t>(n_layers) * static_cast<size_t>(n_experts), 0) {}
    void on_layer_step(int) override {}
    void on_use(int layer, int expert) override { last_use_[key(layer, expert, n_experts_)] = ++tick_; }
    bool colder(int la, int ea, int lb, int eb) const override {
        return last_use_[key(la, ea, n_experts_)] < last_use_[key(lb, eb, n_experts_)];
    }
    bool displaces(int, int, int, int) const override { return true; }

private:
    int n_experts_;
    uint64_t tick_ = 0;
    std::vector<uint64_t> last_use_;
};

class HotnessEviction final : public Eviction {
public:
    HotnessEviction(double decay, double margin, int n_layers, int n_experts)
        : decay_(decay), margin_(margin), n_experts_(n_experts), clock_(static_cast<size_t>(n_layers), 0),
          entries_(static_cast<size_t>(n_layers) * static_cast<size_t>(n_experts)) {}

    void on_layer_step(int layer) override { ++clock_[static_cast<size_t>(layer)]; }

    void on_use(int layer, int expert) override {
        Entry& e = entries_[key(layer, expert, n_experts_)];
        e.heat = heat_now(layer, e) + 1.0;
        e.at = clock_[static_cast<size_t>(layer)];
        e.last_use = ++tick_;
    }

    bool colder(int la, int ea, int lb, int eb) const override {
        const Entry& a = entries_[key(la, ea, n_experts_)];
        const Entry& b = entries_[key(lb, eb, n_experts_)];
        const double ha = heat_now(la, a), hb = heat_now(lb, b);
        if (ha != hb) return ha < hb;
        return a.last_use < b.last_use;  // equal heat: least recently used leaves first
    }

    bool displaces(int ln, int en, int lc, int ec) const override {
        if (margin_ < 0.0) return true;
        const double newcomer = heat_now(ln, entries_[key(ln, en, n_experts_)]) + 1.0;  // with the use it is read for
        return newcomer > heat_now(lc, entries_[key(lc, ec, n_experts_)]) * (1.0 + margin_);
    }

private:
    struct Entry {
        double heat = 0.0;
        uint64_t at = 0;        // the layer clock when heat was last updated
        uint64_t last_use = 0;  // global tick, for ties
    };
    double heat_now(int layer, const Entry& e) const {
        const uint64_t steps = clock_[static_cast<size_t>(layer)] - e.at;
        return e.heat * std::pow(decay_, static_cast<double>(steps));
    }

    double decay_;
    double margin_;
    int n_experts_;
    uint64_t tick_ = 0;
    std::vector<uint64_t> clock_;
    std::vector<Entry> entries_;
};

}  // namespace

const char* eviction_policy_name(EvictionPolicy p) { return p == EvictionPolicy::lru ? "lru" : "hotness"; }

std::unique_ptr<Eviction> make_eviction(const EvictionSettings& settings, int n_layers, int n_experts) {
    if (settings.policy == EvictionPolicy::lru) return std::make_unique<LruEviction>(n_layers, n_experts);
    return std::make_unique<HotnessEviction>(settings.decay, settings.margin, n_layers, n_experts);
}

std::optional<double> hotness_margin_from_text(std::string_view text) {
    if (text == "off") return -1.0;
    double m = 0.0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), m);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !(m >= 0.0 && m <= 100.0))
        return std::nullopt;
    return m;
}

void VictimChoice::offer(size_t slot, int layer, int expert, bool on_probation) {
    std::optional<Candidate>& coldest = on_probation ? coldest_on_probation_ : coldest_cached_;
    if (!coldest || eviction_.colder(layer, expert, coldest->layer, coldest->expert)) coldest = Candidate{slot, layer, expert};
}

std::optional<VictimChoice::Placement> VictimChoice::choose(int layer, int expert, bool read_ahead) const {
    if (coldest_cached_ && eviction_.displaces(layer, expert, coldest_cached_->layer, coldest_cached_->expert))
        return Placement{coldest_cached_->slot, false};
    if (coldest_on_probation_) return Placement{coldest_on_probation_->slot, true};
    if (coldest_cached_ && !read_ahead) return Placement{coldest_cached_->slot, true};
    return std::nullopt;
}

CacheSimulation simulate_cache(std::span<const RouteStep> trace, size_t slots, const EvictionSettings& settings,
                               int n_layers, int n_experts) {
    auto eviction = make_eviction(settings, n_layers, n_experts);
    struct Slot {
        int layer = -1;
        int expert = -1;
        bool on_probation = false;
    };
    std::vector<Slot> cache(slots);
    std::unordered_map<size_t, size_t> where;
    CacheSimulation sim;
    for (const RouteStep& step : trace) {
        eviction->on_layer_step(step.layer);
        std::vector<bool> pinned(slots, false);
        for (int32_t e : step.experts) {
            const size_t k = key(step.layer, e, n_experts);
            auto it = where.find(k);
            if (it != where.end()) {
                ++sim.hits;
                pinned[it->second] = true;
                cache[it->second].on_probation = false;  // used again: it earned its place
            } else {
                ++sim.misses;
                std::optional<VictimChoice::Placement> place;
                const auto empty = std::find_if(cache.begin(), cache.end(), [](const Slot& s) { return s.layer < 0; });
                if (empty != cache.end()) {
                    place = VictimChoice::Placement{static_cast<size_t>(empty - cache.begin()), false};
                } else {
                    VictimChoice choice(*eviction);
                    for (size_t s = 0; s < slots; ++s)
                        if (!pinned[s]) choice.offer(s, cache[s].layer, cache[s].expert, cache[s].on_probation);
                    place = choice.choose(step.layer, e);
                }
                if (place) {  // none: more experts than slots in one step, this one is not cached
                    Slot& slot = cache[place->slot];
                    if (slot.layer >= 0) where.erase(key(slot.layer, slot.expert, n_experts));
                    slot = Slot{step.layer, e, place->on_probation};
                    where[k] = place->slot;
                    pinned[place->slot] = true;
                }
            }
            eviction->on_use(step.layer, e);
        }
    }
    return sim;
}

std::string format_route_trace(std::span<const RouteStep> trace) {
    std::string out;
    for (const RouteStep& step : trace) {
        out += std::to_string(step.layer);
        for (int32_t e : step.experts) {
            out += ' ';  // appended apart: g++ 12 warns falsely (-Wrestrict) on " " + std::string
            out += std::to_string(e);
        }
        out += "\n";
    }
    return out;
}

namespace {

// The next whitespace-separated number of a trace line in [0, limit), or an error naming the line
// and the value (a number too large for any integer type is out of range, never 0).
Expected<int> trace_number(std::string_view& rest, int limit, const std::string& where, const char* what) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t' || rest.front() == '\r')) rest.remove_prefix(1);
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

bool only_blanks(std::string_view s) { return s.find_first_not_of(" \t\r") == std::string_view::npos; }

}  // namespace

Expected<std::vector<RouteStep>> parse_route_trace(const std::string& text, const std::string& source_name) {
    std::vector<RouteStep> trace;
    std::string_view all(text);
    size_t number = 0;
    while (!all.empty()) {
        const size_t nl = all.find('\n');
        std::string_view line = all.substr(0, nl);
        all.remove_prefix(nl == std::string_view::npos ? all.size() : nl + 1);
        ++number;
        if (only_blanks(line)) continue;
        const std::string where = source_name + ":" + std::to_string(number);
        RouteStep step;
        STORMO_TRY_ASSIGN(step.layer, trace_number(line, kMaxTraceLayers, where, "layer"));
        while (!only_blanks(line)) {
            STORMO_TRY_ASSIGN(const int e, trace_number(line, kMaxTraceExperts, where, "expert id"));
            step.experts.push_back(e);
        }
        trace.push_back(std::move(step));
    }
    return trace;
}

}  // namespace stormo
