// Selection rules. Scores come from the plugins themselves; the host adds only what it can
// check better (CPU features the description names) and the tie-breaking order.
#include "plugin_loading/selection.hpp"

#include <algorithm>

#include "stormo/quote.hpp"

namespace stormo {
namespace {

bool is_auto(const PluginRequest& r) { return r.value.empty() || r.value == "auto"; }

std::string join(const std::vector<std::string>& items, const char* sep) {
    std::string out;
    for (const std::string& s : items) {
        if (!out.empty()) out += sep;
        out += s;
    }
    return out;
}

std::string feature_names(const std::vector<CpuFeature>& features) {
    std::vector<std::string> names;
    for (CpuFeature f : features) names.emplace_back(cpu_feature_name(f));
    return join(names, ", ");
}

std::string origin_prefix(const PluginRequest& r) {
    // The name comes from the command line or a YAML file: escaped and cut like any value.
    const std::string value = printable(r.value);
    return r.origin.empty() ? value + ": " : r.origin + " " + value + ": ";
}

std::string families_available(const PluginRegistry& registry) {
    std::vector<std::string> items;
    for (const LoadedPlugin* p : registry.of_kind(PluginKind::model))
        items.push_back(p->name + " (" + join(p->accepts, ", ") + ")");
    if (items.empty()) return "no model plugins were found";
    return "families available: " + join(items, "; ");
}

std::string describe_config_identity(const ModelConfig& config) {
    // The names come from config.json: escaped and cut like any value from a file.
    std::string archs = "none";
    if (auto a = config.strings("architectures"); a && !a->empty()) {
        std::vector<std::string> shown;
        for (const std::string& name : *a) shown.push_back(printable(name));
        archs = join(shown, ", ");
    }
    std::string type = "none";
    if (auto t = config.string("model_type"); t) type = printable(*t);
    return "architectures [" + archs + "], model_type '" + type + "'";
}

Expected<FamilySelection> forced_family(const PluginRegistry& registry, const ModelConfig& config,
                                        const PluginRequest& request) {
    const LoadedPlugin* p = registry.find(request.value);
    if (p == nullptr || p->kind != PluginKind::model)
        return fail(ErrorKind::config, origin_prefix(request) + "no such model plugin (" +
                                           families_available(registry) + ")");
    ScoreQuery q;
    q.config = &config;
    return FamilySelection{p, p->score(q), true};
}

std::string kernels_available(const PluginRegistry& registry) {
    std::vector<std::string> names{"auto", kReferenceKernels};
    for (const LoadedPlugin* p : registry.of_kind(PluginKind::kernels)) names.push_back(p->name);
    return "available: " + join(names, ", ");
}

}  // namespace

Expected<FamilySelection> select_family(const PluginRegistry& registry, const ModelConfig& config,
                                        const PluginRequest& request) {
    if (!is_auto(request)) return forced_family(registry, config, request);
    ScoreQuery q;
    q.config = &config;
    FamilySelection best;
    for (const LoadedPlugin* p : registry.of_kind(PluginKind::model)) {
        const int s = p->score(q);
        if (s <= 0) continue;
        if (best.plugin == nullptr || s > best.score || (s == best.score && p->name < best.plugin->name))
            best = FamilySelection{p, s, false};
    }
    if (best.plugin == nullptr)
        return fail(ErrorKind::unsupported, "no model family accepts " + config.source() + ": " +
                                                describe_config_identity(config) + "; " +
                                                families_available(registry));
    return best;
}

int kernels_score(const LoadedPlugin& plugin, CpuFeatureSet cpu) {
    if (plugin.kind != PluginKind::kernels) return 0;
    if (!missing_cpu_features(plugin.cpu_features, cpu).empty()) return 0;
    ScoreQuery q;
    q.cpu = cpu;
    return plugin.score(q);
}

int reference_kernels_score(CpuFeatureSet cpu) { return score_cpu_features({}, cpu); }

Expected<KernelsSelection> select_kernels(const PluginRegistry& registry, CpuFeatureSet cpu,
                                          const PluginRequest& request) {
    if (request.value == kReferenceKernels)
        return KernelsSelection{kReferenceKernels, nullptr, reference_kernels_score(cpu), true};
    if (!is_auto(request)) {
        const LoadedPlugin* p = registry.find(request.value);
        if (p == nullptr || p->kind != PluginKind::kernels)
            return fail(ErrorKind::config,
                        origin_prefix(request) + "no such kernels plugin (" + kernels_available(registry) + ")");
        const std::vector<CpuFeature> missing = missing_cpu_features(p->cpu_features, cpu);
        if (!missing.empty())
            return fail(ErrorKind::unsupported, origin_prefix(request) + "this CPU lacks " +
                                                    feature_names(missing) + " (the plugin needs " +
                                                    feature_names(p->cpu_features) + ")");
        const int s = kernels_score(*p, cpu);
        if (s <= 0)
            return fail(ErrorKind::unsupported,
                        origin_prefix(request) + "the plugin scores itself unusable on this CPU");
        if (!p->kernels)
            return fail(ErrorKind::unsupported, origin_prefix(request) + "the plugin was not created on this machine (" +
                                                    p->unusable_reason + ")");
        return KernelsSelection{p->name, p, s, true};
    }
    KernelsSelection best{kReferenceKernels, nullptr, reference_kernels_score(cpu), false};
    for (const LoadedPlugin* p : registry.of_kind(PluginKind::kernels)) {
        const int s = kernels_score(*p, cpu);
        if (s <= 0 || !p->kernels) continue;  // unusable, or not created on this machine
        if (best.plugin == nullptr || s > best.score || (s == best.score && p->name < best.plugin->name))
            best = KernelsSelection{p->name, p, s, false};
    }
    return best;
}

}  // namespace stormo
