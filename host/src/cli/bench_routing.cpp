#include "cli/bench_routing.hpp"

#include <iomanip>
#include <iostream>

#include "cli/options.hpp"
#include "util/file.hpp"

namespace stormo::cli {
namespace {

RoutedModelShape shape_of_model(const Model& model) {
    RoutedModelShape shape;
    for (int l = 0; l < model.n_layers(); ++l) {
        const LayerPlan& plan = model.layer_plan(l);
        if (plan.ffn != FfnKind::moe) continue;
        shape.moe_layers.push_back(l);
        shape.experts = plan.n_experts;
        shape.top_k = plan.top_k;
    }
    return shape;
}

}  // namespace

Expected<BenchRouting> make_bench_routing(const std::string& spec, const Model& model, uint64_t seed, size_t rows) {
    const RoutedModelShape shape = shape_of_model(model);
    if (shape.moe_layers.empty()) return fail(ErrorKind::invalid_argument, "--routing: the model has no routed experts");
    for (int l : shape.moe_layers)
        if (model.layer_plan(l).n_experts != shape.experts || model.layer_plan(l).top_k != shape.top_k)
            return fail(ErrorKind::unsupported, "--routing: the model's MoE layers differ in experts or top-k");
    BenchRouting out;
    std::vector<RouteStep> trace;
    if (spec.starts_with("trace:")) {
        const std::string path = spec.substr(6);
        auto text = read_file(path, kTraceReadCap, "a route trace");
        if (!text) return tl::unexpected(with_context(text.error(), "--routing"));
        auto parsed = parse_route_trace(*text, path);
        if (!parsed) return tl::unexpected(with_context(parsed.error(), "--routing"));
        trace = std::move(*parsed);
        out.description = "replayed from the route trace " + path;
    } else if (spec == "synthetic" || spec.starts_with("synthetic:")) {
        SyntheticRouting base = published_routing_preset();
        base.layers = static_cast<int>(shape.moe_layers.size());
        base.experts = shape.experts;
        base.top_k = shape.top_k;
        base.tokens = std::max<size_t>(rows, 1);
        base.seed = seed;
        auto routing = parse_synthetic_routing(spec, base);
        if (!routing) return tl::unexpected(with_context(routing.error(), "--routing"));
        if (routing->layers != base.layers || routing->experts != base.experts || routing->top_k != base.top_k)
            return fail(ErrorKind::invalid_argument, "--routing: layers, experts and top-k are the model's (" +
                                                         std::to_string(base.layers) + ", " + std::to_string(base.experts) +
                                                         ", " + std::to_string(base.top_k) + ")");
        auto generated = generate_routes(*routing);
        if (!generated) return tl::unexpected(with_context(generated.error(), "--routing"));
        trace = std::move(*generated);
        out.figures = measure_routes(trace, shape.experts, kFigureWindow);
        out.description = "generated, " + describe(*routing);
    } else {
        return fail(ErrorKind::invalid_argument, "--routing " + spec + ": expected trace:FILE or synthetic[:key=value,...]");
    }
    out.prediction = prediction_accuracy(trace);
    STORMO_TRY_ASSIGN(TraceRouting routes, TraceRouting::create(trace, shape));
    out.routes = std::make_unique<TraceRouting>(std::move(routes));
    return out;
}

void print_routing_note(const BenchRouting& routing) {
    std::cout << "  routing OVERRIDDEN (--routing): " << routing.description << "\n"
              << "  the logits and tokens of this run mean nothing; only the expert store's figures count\n";
    if (routing.prediction.steps)
        std::cout << "  prefetch reads the trace's predictions (recall " << std::fixed << std::setprecision(3)
                  << routing.prediction.recall() << ", precision " << routing.prediction.precision() << ")\n";
    else
        std::cout << "  the trace carries no predictions: nothing is prefetched\n";
    if (routing.figures) std::cout << "  the generated routes' figures (cache-sim --synthetic prints the same):\n"
                                   << figures_table(*routing.figures, "    ");
}

void routing_fields(JsonWriter& j, const BenchRouting* routing) {
    j.key("routing");
    if (!routing) {
        j.null();
        j.field("logits_meaningful", true);
        return;
    }
    j.value(routing->description).field("logits_meaningful", false);
    j.field("routing_prediction_recall", routing->prediction.recall()).field("routing_prediction_precision", routing->prediction.precision());
    if (routing->figures)
        j.key("routing_figures").begin_object().field("consecutive_share", routing->figures->consecutive_share)
            .field("top_half_share", routing->figures->top_half_share).field("gini", routing->figures->gini)
            .field("hot_list_share", routing->figures->hot_list_share).field("lru_hit_rate", routing->figures->lru_hit_rate)
            .end_object();
}

}  // namespace stormo::cli
