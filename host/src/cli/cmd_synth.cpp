// stormo synth: a random-weight checkpoint with a real model's config, tensor names, shapes and
// dtypes, as a family plugin's preset describes them, written streaming (a few MiB of memory
// whatever the size). Progress goes to stderr.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "runtime/engine_config.hpp"
#include "tools/synth.hpp"

namespace stormo::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct SynthCommandOptions {
    std::string preset;
    std::string out;
    uint64_t seed = 0;
    std::optional<int> layers;
    std::optional<int> experts;
    std::string max_shard = "4GiB";
    bool force = false;
    bool dry_run = false;
    bool list = false;
    std::vector<std::string> plugins_dirs;
};

std::string gigabytes(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(bytes) / 1e9);
    return buf;
}

void print_presets(const PluginRegistry& registry) {
    for (const auto& p : synth::synth_presets(registry)) std::cout << p.name << "\t" << p.description << "\n";
}

// Every tensor's elements, as the hub counts a checkpoint's parameters (an FP8 checkpoint's block
// scales included; a packed U8 tensor counts its bytes): what a preset's "671B" or "1T" is checked
// against.
void print_plan(const synth::SynthPlan& plan) {
    uint64_t elements = 0;
    for (const auto& t : plan.tensors) elements += static_cast<uint64_t>(element_count(t.shape));
    std::cout << "preset " << plan.preset << ", " << plan.layers << " layers, seed " << plan.seed << "\n"
              << plan.tensors.size() << " tensors, " << elements << " elements, " << plan.total_bytes() << " bytes ("
              << gigabytes(plan.total_bytes()) << ") in " << plan.shards.size() << " shard(s):\n";
    for (const auto& s : plan.shards)
        std::cout << "  " << s.file_name << "  " << s.tensors.size() << " tensors  " << s.data_bytes << " bytes\n";
}

// One progress line on stderr every couple of seconds: a 65 GB write takes minutes.
class ProgressPrinter {
public:
    void operator()(const synth::SynthProgress& p) {
        const auto now = Clock::now();
        if (now - last_ < std::chrono::seconds(2) && p.bytes_written < p.total_bytes) return;
        last_ = now;
        const double pct = p.total_bytes ? 100.0 * static_cast<double>(p.bytes_written) / static_cast<double>(p.total_bytes) : 100.0;
        const double mbps = p.seconds > 0 ? static_cast<double>(p.bytes_written) / p.seconds / 1e6 : 0.0;
        char line[256];
        std::snprintf(line, sizeof line, "synth: %s of %s (%.1f%%), %.0f MB/s, %s", gigabytes(p.bytes_written).c_str(),
                      gigabytes(p.total_bytes).c_str(), pct, mbps, p.file.c_str());
        std::cerr << line << std::endl;
    }

private:
    Clock::time_point last_ = Clock::now();
};

}  // namespace

int run_synth(int argc, char** argv) {
    SynthCommandOptions o;
    po::options_description d("synth options");
    d.add_options()
        ("preset", po::value<std::string>(&o.preset)->value_name("NAME"), "the model to imitate (--list shows them)")
        ("out", po::value<std::string>(&o.out)->value_name("DIR"), "the directory to write (created if missing)")
        ("seed", po::value<UnsignedArg>()->value_name("S")->notifier([&o](UnsignedArg v) { o.seed = v.value; }), "random seed of the values (0)")
        ("layers", po::value<int>()->value_name("N")->notifier([&o](int v) { o.layers = v; }),
         "number of layers instead of the model's (layer_types follow)")
        ("experts", po::value<int>()->value_name("N")->notifier([&o](int v) { o.experts = v; }),
         "routed experts per layer instead of the model's (each keeps its real shape)")
        ("max-shard", po::value<std::string>(&o.max_shard)->value_name("SIZE"), "shard size limit (4GiB)")
        ("force", po::bool_switch(&o.force), "write into a non-empty directory, replacing its checkpoint")
        ("dry-run", po::bool_switch(&o.dry_run), "print the plan (tensors, their elements and bytes, shards) without writing")
        ("list", po::bool_switch(&o.list), "list the presets of every family plugin found")
        ("plugins-dir", po::value(&o.plugins_dirs)->value_name("DIR")->composing(),
         "another directory to search for family plugins (repeatable)");
    auto parsed = parse_command_line(argc, argv, "synth", "--preset NAME --out DIR [--seed S] [--layers N]",
                                     "Writes a random-weight checkpoint with a real model's config.json, tensor names, "
                                     "shapes and dtypes.",
                                     d);
    if (!parsed) return report_usage_error("synth", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    CommonOptions common;
    if (!o.plugins_dirs.empty()) common.settings["plugins_dirs"] = o.plugins_dirs;
    auto config = resolve_engine_config(common);
    if (!config) return report_error("synth", config.error());
    auto registry = discover_plugins(*config, common);
    if (!registry) return report_error("synth", registry.error());
    if (o.list) {
        print_presets(*registry);
        return 0;
    }
    if (o.preset.empty())
        return report_usage_error("synth", Error{ErrorKind::invalid_argument, "--preset NAME is required"});
    if (o.out.empty() && !o.dry_run)
        return report_usage_error("synth", Error{ErrorKind::invalid_argument, "--out DIR is required"});
    auto shard = parse_size(o.max_shard, "--max-shard");
    if (!shard) return report_usage_error("synth", shard.error());
    if (shard->kind != SizeSpec::Kind::bytes)
        return report_usage_error("synth", Error{ErrorKind::invalid_argument, "--max-shard must be a size in bytes"});

    synth::SynthOptions so;
    so.preset = o.preset;
    so.seed = o.seed;
    so.layers = o.layers;
    so.experts = o.experts;
    so.max_shard_bytes = shard->bytes;
    auto plan = synth::plan_synth(*registry, so);
    if (!plan) return report_usage_error("synth", plan.error());
    if (o.dry_run) {
        print_plan(*plan);
        return 0;
    }

    ProgressPrinter printer;
    synth::WriteOptions wo;
    wo.force = o.force;
    wo.progress = [&printer](const synth::SynthProgress& p) { printer(p); };
    const auto t0 = Clock::now();
    if (auto w = synth::write_synth(*plan, o.out, wo); !w) return report_error("synth", w.error());
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    char line[256];
    std::snprintf(line, sizeof line, "synth: wrote %s (%zu tensors, %zu shard(s)) in %.1f s (%.0f MB/s) to ",
                  gigabytes(plan->total_bytes()).c_str(), plan->tensors.size(), plan->shards.size(), seconds,
                  seconds > 0 ? static_cast<double>(plan->total_bytes()) / seconds / 1e6 : 0.0);
    std::cerr << line << o.out << std::endl;
    return 0;
}

}  // namespace stormo::cli
