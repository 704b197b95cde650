// stormo plugins [--json]: every plugin found, what it needs or accepts, its score here and
// whether it is selected; then the libraries refused, with their reasons.
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "util/json_writer.hpp"
#include "cli/options.hpp"

namespace stormo::cli {
namespace {

struct PluginRow {
    std::string name;
    std::string kind;
    std::string version;
    std::string summary;
    std::string path;             // empty for the built-in reference kernels
    std::vector<std::string> needs;    // kernels: CPU features
    std::vector<std::string> missing;  // kernels: CPU features this machine lacks
    std::vector<std::string> accepts;  // model: architectures / model_type
    std::optional<int> score;          // a model plugin has none without --model
    bool usable = false;
    bool selected = false;
};

std::string join(const std::vector<std::string>& items, const char* sep) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
    return out;
}

std::vector<std::string> feature_names(const std::vector<CpuFeature>& features) {
    std::vector<std::string> out;
    for (CpuFeature f : features) out.emplace_back(cpu_feature_name(f));
    return out;
}

PluginRow kernels_row(const LoadedPlugin& p, CpuFeatureSet cpu, const KernelsSelection& chosen) {
    PluginRow r{p.name, "kernels", p.version, p.summary, p.path, feature_names(p.cpu_features),
                feature_names(missing_cpu_features(p.cpu_features, cpu)), {}, std::nullopt, false, false};
    r.score = kernels_score(p, cpu);
    r.usable = *r.score > 0;
    r.selected = chosen.plugin == &p;
    return r;
}

PluginRow reference_row(CpuFeatureSet cpu, const KernelsSelection& chosen) {
    PluginRow r{kReferenceKernels, "kernels", kSdkVersion,
                "the host's scalar kernels: the definition every kernels plugin is tested against",
                "", {}, {}, {}, reference_kernels_score(cpu), true, chosen.plugin == nullptr};
    return r;
}

PluginRow model_row(const LoadedPlugin& p, const ModelConfig* config, const FamilySelection* chosen) {
    PluginRow r{p.name, "model", p.version, p.summary, p.path, {}, {}, p.accepts, std::nullopt, true, false};
    if (config != nullptr) {
        ScoreQuery q;
        q.config = config;
        r.score = p.score(q);
        r.usable = *r.score > 0 || (chosen != nullptr && chosen->plugin == &p);
        r.selected = chosen != nullptr && chosen->plugin == &p;
    }
    return r;
}

struct Listing {
    std::vector<PluginRow> rows;
    std::vector<RejectedPlugin> rejected;
    std::vector<PluginDir> searched;
};

void print_json(const Listing& l) {
    JsonWriter w;
    w.begin_array();
    for (const PluginRow& r : l.rows) {
        w.begin_object().field("name", r.name).field("kind", r.kind).field("version", r.version);
        w.field("usable", r.usable).field("selected", r.selected);
        w.key("score");
        r.score ? w.value(*r.score) : w.null();
        w.field("rejected", false).field("summary", r.summary);
        w.key("path");
        r.path.empty() ? w.null() : w.value(r.path);
        if (r.kind == "kernels") {
            w.key("features").begin_array();
            for (const std::string& f : r.needs) w.value(f);
            w.end_array().key("missing_features").begin_array();
            for (const std::string& f : r.missing) w.value(f);
            w.end_array();
        } else {
            w.key("accepts").begin_array();
            for (const std::string& a : r.accepts) w.value(a);
            w.end_array();
        }
        w.end_object();
    }
    for (const RejectedPlugin& r : l.rejected) {
        w.begin_object().field("name", r.file_name).field("kind", r.file_kind).key("version").null();
        w.field("usable", false).field("selected", false).key("score").null();
        w.field("rejected", true).field("reason", r.reason).field("path", r.path).end_object();
    }
    w.end_array();
    std::cout << w.str() << "\n";
}

void print_table(const Listing& l) {
    std::vector<std::vector<std::string>> cells{
        {"NAME", "KIND", "VERSION", "SCORE", "USABLE", "SELECTED", "NEEDS / ACCEPTS", "PATH"}};
    for (const PluginRow& r : l.rows) {
        std::string needs = r.kind == "kernels" ? (r.needs.empty() ? "(no CPU features)" : join(r.needs, ","))
                                                : join(r.accepts, ",");
        if (!r.missing.empty()) needs += " (missing " + join(r.missing, ",") + ")";
        cells.push_back({r.name, r.kind, r.version, r.score ? std::to_string(*r.score) : "-",
                         r.usable ? "yes" : "no", r.selected ? "yes" : "no", needs,
                         r.path.empty() ? "(built in)" : r.path});
    }
    std::vector<size_t> width(cells[0].size(), 0);
    for (const auto& row : cells)
        for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    for (const auto& row : cells) {
        std::string line;
        for (size_t c = 0; c < row.size(); ++c) {
            line += row[c];
            if (c + 1 < row.size()) line.append(width[c] - row[c].size() + 2, ' ');
        }
        std::cout << line << "\n";
    }
    if (!l.rejected.empty()) {
        std::cout << "\nrejected:\n";
        for (const RejectedPlugin& r : l.rejected) std::cout << "  " << r.path << ": " << r.reason << "\n";
    }
    std::cout << "\nsearched:\n";
    for (const PluginDir& d : l.searched) std::cout << "  " << d.path << " (" << d.origin << ")\n";
}

}  // namespace

int run_plugins(int argc, char** argv) {
    CommonOptions common;
    bool json = false;
    po::options_description own("Options of stormo plugins");
    own.add_options()("json", po::bool_switch(&json), "print one JSON array of objects instead of a table");
    own.add(common_options(common));
    auto parsed = parse_command_line(
        argc, argv, "plugins", "[--json] [--model DIR] [--kernels NAME] [--plugins-dir DIR]...",
        "Lists every plugin found: name, kind, version, the CPU features it needs or the model types it\n"
        "accepts, its score on this machine, whether it is usable and selected (the kernels for this CPU;\n"
        "with --model, the family for that model), and every library refused with the reason.",
        own);
    if (!parsed) return report_usage_error("plugins", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;

    auto cfg = resolve_engine_config(common);
    if (!cfg) return report_error("plugins", cfg.error());
    auto registry = discover_plugins(*cfg, common);
    if (!registry) return report_error("plugins", registry.error());

    const CpuFeatureSet cpu = detect_cpu_features();
    auto kernels = select_kernels(*registry, cpu, PluginRequest{cfg->kernels, cfg->origin("kernels")});
    if (!kernels) return report_error("plugins", kernels.error());

    std::unique_ptr<ModelSource> source;
    std::optional<FamilySelection> family;
    if (common.model) {
        auto opened = open_model_source(*common.model, registry->families());
        if (!opened) return report_error("plugins", with_model_context(opened.error(), "--model", *common.model));
        source = std::move(*opened);
        auto chosen = select_family(*registry, source->config(), PluginRequest{cfg->family, cfg->origin("family")});
        if (!chosen) return report_error("plugins", chosen.error());
        family = *chosen;
    }

    Listing listing;
    for (const LoadedPlugin* p : registry->of_kind(PluginKind::kernels))
        listing.rows.push_back(kernels_row(*p, cpu, *kernels));
    listing.rows.push_back(reference_row(cpu, *kernels));
    for (const LoadedPlugin* p : registry->of_kind(PluginKind::model))
        listing.rows.push_back(model_row(*p, source ? &source->config() : nullptr, family ? &*family : nullptr));
    listing.rejected = registry->rejected();
    listing.searched = registry->searched();

    if (json) print_json(listing);
    else print_table(listing);
    return 0;
}

}  // namespace stormo::cli
