// stormo bench-kernels: weight bytes streamed per second by the matrix kernels of the reference
// and of every kernels plugin usable here, per format, layout and number of activation rows, at
// each thread count, as a fraction of the RAM read bandwidth measured in the same run
// (tools/kernel_bench.hpp). docs/kernels.md holds the table and the commands.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "util/json_writer.hpp"
#include "cli/options.hpp"
#include "compute/kernel_table.hpp"
#include "runtime/engine_config.hpp"
#include "stormo/quote.hpp"
#include "tools/kernel_bench.hpp"

namespace stormo::cli {
namespace {

struct Options {
    std::string threads = "1,2";
    std::string n_x = "1,8,32";
    std::string cases = "mxfp4,bf16,bf16:in_out,f32";
    std::string kernels;  // empty: the reference and every plugin usable here
    std::string roads = "f32,int8";
    int64_t rows = 5760;
    int64_t cols = 2880;
    std::string set_size = "256MiB";
    double min_time = 0.3;
    std::string ram_probe = "512MiB";
    int ram_repeats = 5;
    std::string ram_streams = "1,2,4";
    bool ram_only = false;
    bool json = false;
    std::vector<std::string> plugins_dirs;
};

std::vector<std::string> split(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

Expected<std::vector<size_t>> positive_list(const std::string& text, const std::string& option) {
    std::vector<size_t> out;
    for (const std::string& item : split(text)) {
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size() || v <= 0)
            return fail(ErrorKind::invalid_argument, option + " '" + printable(text) + "': '" + printable(item) + "' is not a positive integer");
        out.push_back(static_cast<size_t>(v));
    }
    if (out.empty()) return fail(ErrorKind::invalid_argument, option + ": needs at least one value");
    return out;
}

// "mxfp4", "bf16", "bf16:in_out", "bf16_packed", "f32:out_in", "f16", "fp8" (E4M3 in 128 x 128 scale blocks), and GGUF's block types by ggml's names:
// "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs", "iq1_s", "iq1_m", "iq2_xxs",
// "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "gguf_mxfp4"
// (out_in only).
Expected<std::vector<BenchMatrixCase>> parse_cases(const std::string& text) {
    std::vector<BenchMatrixCase> out;
    for (const std::string& item : split(text)) {
        const size_t colon = item.find(':');
        const std::string format = item.substr(0, colon);
        const std::string layout = colon == std::string::npos ? "out_in" : item.substr(colon + 1);
        BenchMatrixCase c;
        if (format == "mxfp4") c.format = WeightFormat::MXFP4;
        else if (format == "bf16") c.format = WeightFormat::BF16;
        else if (format == "bf16_packed") c.format = WeightFormat::BF16_PACKED;
        else if (format == "f16") c.format = WeightFormat::F16;
        else if (format == "f32") c.format = WeightFormat::F32;
        else if (format == "q8_0") c.format = WeightFormat::GGUF_Q8_0;
        else if (format == "q4_0") c.format = WeightFormat::GGUF_Q4_0;
        else if (format == "q4_k") c.format = WeightFormat::GGUF_Q4_K;
        else if (format == "q5_k") c.format = WeightFormat::GGUF_Q5_K;
        else if (format == "q6_k") c.format = WeightFormat::GGUF_Q6_K;
        else if (format == "gguf_mxfp4") c.format = WeightFormat::GGUF_MXFP4;
        else if (format == "q4_1") c.format = WeightFormat::GGUF_Q4_1;
        else if (format == "q5_0") c.format = WeightFormat::GGUF_Q5_0;
        else if (format == "q5_1") c.format = WeightFormat::GGUF_Q5_1;
        else if (format == "q2_k") c.format = WeightFormat::GGUF_Q2_K;
        else if (format == "q3_k") c.format = WeightFormat::GGUF_Q3_K;
        else if (format == "iq4_nl") c.format = WeightFormat::GGUF_IQ4_NL;
        else if (format == "iq4_xs") c.format = WeightFormat::GGUF_IQ4_XS;
        else if (format == "iq2_xxs") c.format = WeightFormat::GGUF_IQ2_XXS;
        else if (format == "iq2_xs") c.format = WeightFormat::GGUF_IQ2_XS;
        else if (format == "iq2_s") c.format = WeightFormat::GGUF_IQ2_S;
        else if (format == "iq3_xxs") c.format = WeightFormat::GGUF_IQ3_XXS;
        else if (format == "iq3_s") c.format = WeightFormat::GGUF_IQ3_S;
        else if (format == "iq1_s") c.format = WeightFormat::GGUF_IQ1_S;
        else if (format == "iq1_m") c.format = WeightFormat::GGUF_IQ1_M;
        else if (format == "fp8") c.format = WeightFormat::FP8_E4M3;
        else
            return fail(ErrorKind::invalid_argument, "--formats: unknown format '" + printable(format) +
                                                         "' (mxfp4, bf16, bf16_packed, f16, f32, fp8, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, gguf_mxfp4)");
        if (layout == "out_in") c.layout = Layout::out_in;
        else if (layout == "in_out") c.layout = Layout::in_out;
        else return fail(ErrorKind::invalid_argument, "--formats: unknown layout '" + printable(layout) + "' (out_in, in_out)");
        const bool blocks = c.format == WeightFormat::MXFP4 || c.format == WeightFormat::BF16_PACKED ||
                            c.format == WeightFormat::FP8_E4M3 ||
                            gguf_weight_block(c.format).values != 0;
        if (blocks && c.layout == Layout::in_out)
            return fail(ErrorKind::invalid_argument, "--formats: " + format + ":in_out does not exist (its blocks run along a row)");
        out.push_back(c);
    }
    if (out.empty()) return fail(ErrorKind::invalid_argument, "--formats: needs at least one format");
    return out;
}

Expected<uint64_t> bytes_option(const std::string& text, const std::string& option) {
    auto s = parse_size(text, option);
    if (!s) return tl::unexpected(Error{ErrorKind::invalid_argument, s.error().message});
    if (s->kind != SizeSpec::Kind::bytes) return fail(ErrorKind::invalid_argument, option + " must be a size in bytes");
    return s->bytes;
}

// The tables to measure: one per (kernels, road); they point into the registry's plugins.
struct Tables {
    std::vector<std::string> names;
    std::vector<std::unique_ptr<KernelTable>> tables;
    std::vector<BenchKernels> list;
};

Expected<void> build_tables(const PluginRegistry& registry, const Options& o, Tables& out) {
    std::vector<std::string> wanted = split(o.kernels);
    const CpuFeatureSet cpu = detect_cpu_features();
    if (wanted.empty()) {
        wanted.push_back(kReferenceKernels);
        for (const LoadedPlugin* p : registry.of_kind(PluginKind::kernels))
            if (p->kernels && kernels_score(*p, cpu) > 0) wanted.push_back(p->name);
    }
    const std::vector<std::string> roads = split(o.roads);
    for (const std::string& road : roads)
        if (road != "f32" && road != "int8")
            return fail(ErrorKind::invalid_argument, "--roads: unknown road '" + printable(road) + "' (f32, int8)");
    for (const std::string& name : wanted) {
        STORMO_TRY_ASSIGN(auto selection, select_kernels(registry, cpu, PluginRequest{name, "--kernels-list"}));
        for (const std::string& road : roads) {
            auto table = std::make_unique<KernelTable>(build_kernel_table(selection));
            out.list.push_back(BenchKernels{selection.name, table.get(), road == "int8"});
            out.tables.push_back(std::move(table));
        }
    }
    return {};
}

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

const char* layout_name(Layout l) { return l == Layout::out_in ? "out_in" : "in_out"; }

void print_row(const KernelBenchRow& r) {
    char line[256];
    std::snprintf(line, sizeof line, "%-10s %-6s %5zu %4zu %3zu  %-10s %-4s %8s GB/s %6s%% %9s ms",
                  weight_format_name(r.format), layout_name(r.layout), r.cols, r.n_x, r.threads, r.kernels.c_str(), r.road.c_str(),
                  fixed(r.bytes_per_s / 1e9, 2).c_str(), fixed(100.0 * r.ram_fraction, 1).c_str(),
                  fixed(1e3 * r.seconds_per_call, 3).c_str());
    std::cout << line << std::endl;
}

void print_json(const KernelBenchReport& report, const KernelBenchOptions& o) {
    JsonWriter w;
    w.begin_object().field("rows", o.rows).field("cols", o.cols).field("set_bytes", o.set_bytes);
    w.key("ram").begin_array();
    for (const RamBandwidth& r : report.ram)
        w.begin_object()
            .field("threads", r.threads)
            .field("bytes_per_s", r.bytes_per_s)
            .field("median_bytes_per_s", r.median_bytes_per_s)
            .field("buffer_bytes", r.buffer_bytes)
            .field("streams", r.streams)
            .field("loop", r.loop)
            .end_object();
    w.end_array().key("results").begin_array();
    for (const KernelBenchRow& r : report.rows)
        w.begin_object()
            .field("kernels", r.kernels)
            .field("road", r.road)
            .field("format", weight_format_name(r.format))
            .field("layout", layout_name(r.layout))
            .field("n_x", r.n_x)
            .field("cols", r.cols)
            .field("threads", r.threads)
            .field("matrices", r.matrices)
            .field("bytes_per_matrix", r.bytes_per_matrix)
            .field("calls", r.calls)
            .field("seconds_per_call", r.seconds_per_call)
            .field("weight_bytes_per_s", r.bytes_per_s)
            .field("best_weight_bytes_per_s", r.best_bytes_per_s)
            .field("ram_bytes_per_s", r.ram_bytes_per_s)
            .field("ram_fraction", r.ram_fraction)
            .end_object();
    w.end_array().end_object();
    std::cout << w.str() << "\n";
}

}  // namespace

int run_bench_kernels(int argc, char** argv) {
    Options o;
    po::options_description own("Options of stormo bench-kernels");
    own.add_options()
        ("threads-list", po::value(&o.threads)->value_name("LIST"), "thread counts, comma-separated (1,2)")
        ("n-x", po::value(&o.n_x)->value_name("LIST"), "activation rows per call: 1 is matrix x vector (1,8,32)")
        ("formats", po::value(&o.cases)->value_name("LIST"),
         "format[:layout] cases: mxfp4, bf16, bf16_packed (out_in), fp8 (E4M3, 128 x 128 scale blocks, out_in), f16, f32, "
         "layout out_in or in_out; GGUF blocks q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, "
         "q5_k, q6_k, iq4_nl, iq4_xs, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, gguf_mxfp4 (out_in; K-quants and i-quants on --cols rounded down to 256s) (mxfp4,bf16,bf16:in_out,f32)")
        ("kernels-list", po::value(&o.kernels)->value_name("LIST"),
         "kernels to measure: reference and plugin names (default: reference and every plugin usable here)")
        ("roads", po::value(&o.roads)->value_name("LIST"), "activation roads: f32, int8 (int8 only where a format has it)")
        ("rows", po::value(&o.rows)->value_name("N"), "matrix outputs (5760)")
        ("cols", po::value(&o.cols)->value_name("N"), "matrix inputs, a multiple of 32 (2880)")
        ("set-size", po::value(&o.set_size)->value_name("SIZE"), "weights per format, read round-robin (256MiB)")
        ("min-time", po::value(&o.min_time)->value_name("S"), "seconds timed per measurement (0.3)")
        ("ram-probe", po::value(&o.ram_probe)->value_name("SIZE"), "buffer of the RAM read probe (512MiB)")
        ("ram-repeats", po::value(&o.ram_repeats)->value_name("N"), "rounds of the RAM probe, one pass per stream count (1, 2, 4) each; the best pass counts (5)")
        ("ram-streams", po::value(&o.ram_streams)->value_name("LIST"),
         "stream counts per thread the RAM probe tries, the best pass counts (1,2,4)")
        ("ram-only", po::bool_switch(&o.ram_only), "measure only the RAM read probe (no matrices)")
        ("json", po::bool_switch(&o.json), "print one JSON object")
        ("plugins-dir", po::value(&o.plugins_dirs)->value_name("DIR")->composing(),
         "another directory to search for plugins (repeatable)");
    auto parsed = parse_command_line(
        argc, argv, "bench-kernels", "[--threads-list 1,2] [--n-x 1,8,32] [--formats LIST] [--kernels-list LIST] [--json]",
        "Measures the matrix kernels of the reference and of every kernels plugin usable here: weight bytes\n"
        "streamed per second per format, layout and number of activation rows, at each thread count, as a\n"
        "fraction of the RAM read bandwidth measured in the same run with the same threads. Matrices are\n"
        "read round-robin from a set larger than the caches, as decode reads the experts it routes to.",
        own);
    if (!parsed) return report_usage_error("bench-kernels", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;

    KernelBenchOptions options;
    auto threads = positive_list(o.threads, "--threads-list");
    if (!threads) return report_usage_error("bench-kernels", threads.error());
    for (size_t t : *threads)
        if (auto ok = check_thread_count(static_cast<int64_t>(std::min<size_t>(t, INT64_MAX)), "--threads-list"); !ok)
            return report_usage_error("bench-kernels", ok.error());
    options.threads = *threads;
    auto n_x = positive_list(o.n_x, "--n-x");
    if (!n_x) return report_usage_error("bench-kernels", n_x.error());
    for (size_t n : *n_x)
        if (n > 4096)
            return report_usage_error("bench-kernels",
                                      Error{ErrorKind::invalid_argument, "--n-x " + std::to_string(n) + ": at most 4096 rows"});
    options.n_x = *n_x;
    auto cases = parse_cases(o.cases);
    if (!cases) return report_usage_error("bench-kernels", cases.error());
    options.cases = *cases;
    // Up to 2^20 each: a matrix bigger than that is no kernel benchmark (and could not be allocated).
    constexpr int64_t kMaxDim = int64_t{1} << 20;
    if (o.rows <= 0 || o.rows > kMaxDim || o.cols <= 0 || o.cols > kMaxDim || o.cols % 32 != 0)
        return report_usage_error("bench-kernels",
                                  Error{ErrorKind::invalid_argument, "--rows must be in 1.." + std::to_string(kMaxDim) +
                                                                         " and --cols a multiple of 32 in 32.." +
                                                                         std::to_string(kMaxDim)});
    options.rows = static_cast<size_t>(o.rows);
    options.cols = static_cast<size_t>(o.cols);
    auto set = bytes_option(o.set_size, "--set-size");
    if (!set) return report_usage_error("bench-kernels", set.error());
    options.set_bytes = *set;
    auto probe = bytes_option(o.ram_probe, "--ram-probe");
    if (!probe) return report_usage_error("bench-kernels", probe.error());
    options.ram_probe_bytes = *probe;
    if (!(o.min_time > 0.0) || o.ram_repeats < 1)
        return report_usage_error("bench-kernels", Error{ErrorKind::invalid_argument,
                                                         "--min-time and --ram-repeats must be positive"});
    options.min_seconds = o.min_time;
    options.ram_repeats = o.ram_repeats;
    auto streams = positive_list(o.ram_streams, "--ram-streams");
    if (!streams) return report_usage_error("bench-kernels", streams.error());
    for (size_t s : *streams)
        if (s > 64) return report_usage_error("bench-kernels", Error{ErrorKind::invalid_argument, "--ram-streams: at most 64"});
    if (streams->empty()) return report_usage_error("bench-kernels", Error{ErrorKind::invalid_argument, "--ram-streams: give at least one"});
    options.ram_streams = *streams;
    options.ram_only = o.ram_only;

    CommonOptions common;
    common.settings["plugins_dirs"] = o.plugins_dirs;
    auto registry = discover_plugins(default_engine_config(), common);
    if (!registry) return report_error("bench-kernels", registry.error());
    Tables tables;
    if (auto built = build_tables(*registry, o, tables); !built) return report_error("bench-kernels", built.error());

    if (!o.json && !o.ram_only) {
        std::cout << "matrices " << options.rows << " x " << options.cols << ", about "
                  << format_bytes(options.set_bytes) << " of each format read round-robin\n";
        std::cout << "format     layout  cols  n_x thr  kernels    road   weights      %RAM   per call" << std::endl;
    }
    auto report = run_kernel_bench(tables.list, options, [&](const KernelBenchRow& r) {
        if (!o.json) print_row(r);
    });
    if (!report) return report_error("bench-kernels", report.error());
    if (o.json) {
        print_json(*report, options);
    } else {
        for (const RamBandwidth& r : report->ram)
            std::cout << "RAM read bandwidth, " << r.threads << " thread(s): " << fixed(r.bytes_per_s / 1e9, 2)
                      << " GB/s best, " << fixed(r.median_bytes_per_s / 1e9, 2) << " GB/s median of " << r.passes
                      << " passes over " << format_bytes(r.buffer_bytes) << ", best with " << r.streams << " streams per thread, "
                      << r.loop << " loop\n";
    }
    return 0;
}

}  // namespace stormo::cli
