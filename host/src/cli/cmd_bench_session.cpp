// stormo bench-session: what a saved session costs and saves. A random prompt is prefilled (the
// cold time to first token), saved to a session file, dropped from the page cache, loaded back
// and continued by one token that must be the uninterrupted session's bits; the save and the load
// are set against this disk's write and read bounds measured in the same run on the same
// directory (tools/session_io_bench.hpp). docs/benchmarks.md holds the table and the commands.
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "cli/commands.hpp"
#include "util/json_writer.hpp"
#include "cli/model_command.hpp"
#include "cli/progress.hpp"
#include "tools/session_io_bench.hpp"
#include "util/format_bytes.hpp"

namespace stormo::cli {
namespace {

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

void print_json(const LoadedEngine& loaded, const SessionIoRun& r) {
    const double save_rate = ratio(static_cast<double>(r.file_bytes), r.save_seconds);
    const double load_rate = ratio(static_cast<double>(r.file_bytes), r.load_seconds);
    JsonWriter j;
    j.begin_object()
        .field("family", loaded.engine->family_name())
        .field("kernels", loaded.engine->kernels_name())
        .field("rounds", r.rounds)
        .field("positions", r.positions)
        .field("kv_bytes", r.kv_bytes)
        .field("kv_bytes_per_position", r.positions ? r.kv_bytes / r.positions : 0)
        .field("file_bytes", r.file_bytes)
        .field("prefill_seconds", r.prefill_seconds)
        .field("save_seconds", r.save_seconds)
        .field("replace_seconds", r.replace_seconds)
        .field("load_seconds", r.load_seconds)
        .field("load_cached_seconds", r.load_cached_seconds)
        .field("page_cache_dropped", r.page_cache_dropped)
        .field("continues_exactly", r.continues_exactly)
        .field("save_bytes_per_s", save_rate)
        .field("load_bytes_per_s", load_rate)
        .field("write_bound_bytes_per_s", r.write_bound_bytes_per_s)
        .field("read_bound_bytes_per_s", r.read_bound_bytes_per_s)
        .field("read_bound_direct_io", r.read_bound_direct)
        .field("save_bound_ratio", ratio(save_rate, r.write_bound_bytes_per_s))
        .field("load_bound_ratio", ratio(load_rate, r.read_bound_bytes_per_s))
        .field("save_bound_ratio_median_round", r.save_pair_ratio)
        .field("load_bound_ratio_median_round", r.load_pair_ratio)
        .field("load_speedup_over_prefill", ratio(r.prefill_seconds, r.load_seconds))
        .end_object();
    std::cout << j.str() << "\n";
}

void print_table(const LoadedEngine& loaded, const SessionIoRun& r) {
    const double save_rate = ratio(static_cast<double>(r.file_bytes), r.save_seconds);
    const double load_rate = ratio(static_cast<double>(r.file_bytes), r.load_seconds);
    std::cout << std::fixed << std::setprecision(2);
    std::cout << "model family       " << loaded.engine->family_name() << ", kernels " << loaded.engine->kernels_name() << "\n"
              << "session            " << r.positions << " positions, KV " << format_bytes(r.kv_bytes) << " ("
              << format_bytes(r.positions ? r.kv_bytes / r.positions : 0) << " a position), file " << format_bytes(r.file_bytes) << "\n"
              << "prefill (cold)     " << r.prefill_seconds << " s\n"
              << "rounds             " << r.rounds << " (save, write bound, then load and read bound in turns; median times, best bounds)\n"
              << "save               " << r.save_seconds << " s, " << format_bytes(static_cast<uint64_t>(save_rate)) << "/s = "
              << ratio(save_rate, r.write_bound_bytes_per_s) << "x the write bound ("
              << format_bytes(static_cast<uint64_t>(r.write_bound_bytes_per_s)) << "/s, 8 MiB writes and fsync, buffered or direct); "
              << r.save_pair_ratio << "x in the median round\n"
              << "save over the last " << r.replace_seconds << " s (the old file's blocks freed in the rename)\n"
              << "load (from disk)   " << r.load_seconds << " s, " << format_bytes(static_cast<uint64_t>(load_rate)) << "/s = "
              << ratio(load_rate, r.read_bound_bytes_per_s) << "x the read bound ("
              << format_bytes(static_cast<uint64_t>(r.read_bound_bytes_per_s)) << "/s, "
              << (r.read_bound_direct ? "O_DIRECT" : "buffered after dropping the page cache") << ", the session file itself); "
              << r.load_pair_ratio << "x in the median round"
              << (r.page_cache_dropped ? "" : " [the page cache kept the file: this load read memory]") << "\n"
              << "load (page cache)  " << r.load_cached_seconds << " s\n"
              << "restart vs cold    load " << ratio(r.prefill_seconds, r.load_seconds) << "x faster than the prefill\n"
              << "continues exactly  " << (r.continues_exactly ? "yes" : "NO") << "\n";
    auto rates = [](const std::vector<double>& v) {
        std::string out;
        for (double x : v) {
            if (!out.empty()) out += ' ';
            out += format_bytes(static_cast<uint64_t>(x));
            out += "/s";
        }
        return out;
    };
    std::cout << "each round         save " << rates(r.save_rates) << "; write bound " << rates(r.write_rates) << "\n"
              << "                   load " << rates(r.load_rates) << "; read bound " << rates(r.read_rates) << "\n";
}

}  // namespace

int run_bench_session(int argc, char** argv) {
    CommonOptions common;
    int64_t prompt_tokens = 2048;
    int64_t seed = 0;
    int64_t rounds = 3;
    std::string dir;
    bool json = false;
    po::options_description d("bench-session options");
    d.add_options()
        ("prompt-tokens", po::value<int64_t>(&prompt_tokens)->value_name("N"), "positions the session holds (default 2048)")
        ("dir", po::value<std::string>(&dir)->value_name("DIR")->required(), "where the session file and the disk probe's file go (both removed)")
        ("rounds", po::value<int64_t>(&rounds)->value_name("N"), "rounds of save, load and disk probes; medians reported (default 3)")
        ("seed", po::value<int64_t>(&seed)->value_name("S"), "the random prompt's seed (default 0)")
        ("json", po::bool_switch(&json), "one JSON object");
    d.add(common_options(common));
    auto parsed = parse_command_line(argc, argv, "bench-session", "MODEL --dir DIR [--prompt-tokens N] [options]",
                                     "Prefills a random prompt, saves the session, loads it back from the disk and checks\n"
                                     "that it continues with the same bits; save and load against the disk's bounds.",
                                     d, {"model"});
    if (!parsed) return report_usage_error("bench-session", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if (rounds < 1) return report_usage_error("bench-session", Error{ErrorKind::invalid_argument, "--rounds must be at least 1"});
    if (prompt_tokens < 1) return report_usage_error("bench-session", Error{ErrorKind::invalid_argument, "--prompt-tokens must be at least 1"});

    TerminalProgress progress;
    auto loaded = open_engine(common, 0, static_cast<size_t>(prompt_tokens) + 1, "--prompt-tokens");
    if (!loaded) return report_error("bench-session", loaded.error());
    SessionIoRequest request;
    request.prompt_tokens = static_cast<size_t>(prompt_tokens);
    request.dir = dir;
    request.seed = static_cast<uint64_t>(seed);
    request.rounds = static_cast<size_t>(rounds);
    if (progress.enabled())
        request.on_progress = [&progress](const char* stage, size_t done, size_t total) { progress.update(stage, done, total); };
    auto run = run_session_io_bench(*loaded->engine, request);
    progress.clear();
    if (!run) return report_error("bench-session", run.error());
    if (json) print_json(*loaded, *run);
    else print_table(*loaded, *run);
    if (!run->continues_exactly)
        return report_error("bench-session", Error{ErrorKind::internal, "bench-session: the loaded session's next logits differ from the uninterrupted session's"});
    return 0;
}

}  // namespace stormo::cli
