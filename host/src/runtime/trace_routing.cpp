#include "runtime/trace_routing.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

namespace stormo {
namespace {

bool contains(const std::vector<int32_t>& v, int32_t e) { return std::find(v.begin(), v.end(), e) != v.end(); }

// Each trace id stands for r model ids (e*r + j modulo the model's count), in order, without repeats.
std::vector<int32_t> spread(const std::vector<int32_t>& ids, int r, int experts) {
    std::vector<int32_t> out;
    for (int32_t e : ids)
        for (int j = 0; j < r; ++j) {
            const auto id = static_cast<int32_t>((int64_t{e} * r + j) % experts);
            if (!contains(out, id)) out.push_back(id);
        }
    return out;
}

// The first k of the spread ids, completed with the ids after the largest taken, cyclically.
std::vector<int32_t> row_experts(const std::vector<int32_t>& ids, int r, int experts, int k) {
    std::vector<int32_t> out = spread(ids, r, experts);
    if (out.size() > static_cast<size_t>(k)) out.resize(static_cast<size_t>(k));
    int32_t next = out.empty() ? 0 : (*std::max_element(out.begin(), out.end()) + 1) % experts;
    while (out.size() < static_cast<size_t>(k)) {
        if (!contains(out, next)) out.push_back(next);
        next = (next + 1) % experts;
    }
    return out;
}

}  // namespace

Expected<TraceRouting> TraceRouting::create(const std::vector<RouteStep>& trace, const RoutedModelShape& model) {
    if (model.moe_layers.empty() || model.experts < 1 || model.top_k < 1 || model.top_k > model.experts)
        return fail(ErrorKind::invalid_argument, "--routing: the model has no routed experts to replay routes onto");
    std::vector<int> layers;
    for (const RouteStep& step : trace)
        if (!std::count(layers.begin(), layers.end(), step.layer)) layers.push_back(step.layer);
    std::sort(layers.begin(), layers.end());
    // Cut into passes; keep the one-row ones that hold every layer.
    std::vector<std::map<int, const RouteStep*>> passes;
    std::map<int, const RouteStep*> current;
    bool multi_row = false;
    int last_layer = -1;
    auto close = [&] {
        if (!current.empty() && !multi_row && current.size() == layers.size()) passes.push_back(current);
        current.clear();
        multi_row = false;
    };
    for (const RouteStep& step : trace) {
        if (step.layer <= last_layer) close();
        last_layer = step.layer;
        if (step.rows > 1) multi_row = true;
        if (!step.experts.empty()) current[step.layer] = &step;
    }
    close();
    if (passes.empty())
        return fail(ErrorKind::invalid_argument, "--routing: the trace holds no one-row pass through all of its " +
                                                     std::to_string(layers.size()) + " layers to replay");
    size_t fewest = SIZE_MAX;
    for (const auto& pass : passes)
        for (const auto& [layer, step] : pass) fewest = std::min(fewest, step->experts.size());
    const int r = static_cast<int>((static_cast<size_t>(model.top_k) + fewest - 1) / fewest);
    bool predictions = false;
    std::vector<std::vector<Mapped>> mapped;
    for (const auto& pass : passes) {
        std::vector<Mapped> row;
        for (size_t i = 0; i < model.moe_layers.size(); ++i) {
            const RouteStep& step = *pass.at(layers[i % layers.size()]);
            predictions = predictions || !step.predicted.empty();
            row.push_back({row_experts(step.experts, r, model.experts, model.top_k), spread(step.predicted, r, model.experts)});
        }
        mapped.push_back(std::move(row));
    }
    return TraceRouting(model, std::move(mapped), predictions);
}

int TraceRouting::moe_index(int layer) const {
    const auto it = std::lower_bound(model_.moe_layers.begin(), model_.moe_layers.end(), layer);
    return it != model_.moe_layers.end() && *it == layer ? static_cast<int>(it - model_.moe_layers.begin()) : -1;
}

size_t TraceRouting::pass_of(const RouteRow& row) const {
    // A sequence starts at a place spread by its first token (a multiplicative hash), then walks on.
    const uint64_t n = passes_.size();
    const uint64_t start = (static_cast<uint64_t>(static_cast<uint32_t>(row.sequence)) * 0x9E3779B97F4A7C15ull) >> 11;
    return static_cast<size_t>((start % n + static_cast<uint64_t>(row.position) % n) % n);
}

std::vector<int32_t> TraceRouting::route(int layer, std::span<const RouteRow> rows, size_t k, int n_experts) {
    const int index = moe_index(layer);
    if (index == 0) block_.assign(rows.begin(), rows.end());  // a new block's walk through the layers
    std::vector<int32_t> out;
    out.reserve(rows.size() * k);
    for (const RouteRow& row : rows) {
        std::vector<int32_t> ids;
        if (index >= 0 && k == static_cast<size_t>(model_.top_k) && n_experts == model_.experts)
            ids = passes_[pass_of(row)][static_cast<size_t>(index)].experts;
        else  // a layer outside the shape given at creation: the same completion rule from nothing
            ids = row_experts({}, 1, n_experts, static_cast<int>(k));
        out.insert(out.end(), ids.begin(), ids.end());
    }
    return out;
}

std::vector<int32_t> TraceRouting::predict(int layer) {
    const int index = moe_index(layer);
    if (index < 0) return {};
    std::vector<int32_t> out;
    for (const RouteRow& row : block_)
        for (int32_t e : passes_[pass_of(row)][static_cast<size_t>(index)].predicted)
            if (!contains(out, e)) out.push_back(e);
    std::sort(out.begin(), out.end());
    return out;
}

Expected<std::vector<RouteStep>> batched_route_trace(const std::vector<RouteStep>& trace, size_t streams) {
    if (streams < 1 || streams > kMaxStreams)
        return fail(ErrorKind::invalid_argument,
                    "--streams " + std::to_string(streams) + ": must be from 1 to " + std::to_string(kMaxStreams));
    RoutedModelShape shape;
    size_t fewest = SIZE_MAX;
    for (const RouteStep& step : trace) {
        if (!std::count(shape.moe_layers.begin(), shape.moe_layers.end(), step.layer)) shape.moe_layers.push_back(step.layer);
        if (step.rows <= 1 && !step.experts.empty()) fewest = std::min(fewest, step.experts.size());
    }
    std::sort(shape.moe_layers.begin(), shape.moe_layers.end());
    shape.experts = shape_of(trace).experts;
    if (fewest == SIZE_MAX) return fail(ErrorKind::invalid_argument, "--streams: the trace holds no one-row step to replay");
    shape.top_k = static_cast<int>(fewest);  // so every trace id stands for itself
    STORMO_TRY_ASSIGN(TraceRouting routing, TraceRouting::create(trace, shape));
    std::vector<RouteRow> rows(streams);
    std::vector<RouteStep> out;
    out.reserve(routing.passes() * shape.moe_layers.size());
    for (size_t token = 0; token < routing.passes(); ++token) {
        for (size_t i = 0; i < streams; ++i) rows[i] = RouteRow{static_cast<int32_t>(i), static_cast<int64_t>(token)};
        for (int layer : shape.moe_layers) {
            std::vector<int32_t> chosen = routing.route(layer, rows, static_cast<size_t>(shape.top_k), shape.experts);
            std::sort(chosen.begin(), chosen.end());
            chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
            out.push_back(RouteStep{layer, std::move(chosen), static_cast<uint32_t>(streams),
                                    routing.has_predictions() ? routing.predict(layer) : std::vector<int32_t>{}});
        }
    }
    return out;
}

}  // namespace stormo
