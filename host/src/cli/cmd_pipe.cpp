// stormo pipe: the line protocol on stdin/stdout for programs that embed stormo without HTTP
// (pipe/pipe_protocol.hpp holds the lines); diagnostics go to stderr.
#include <csignal>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "cli/model_command.hpp"
#include "cli/speculation_json.hpp"
#include "cli/store_stats_json.hpp"
#include "pipe/pipe_server.hpp"
#include "runtime/engine_identity.hpp"
#include "runtime/generation.hpp"
#include "util/file.hpp"
#include "util/json_writer.hpp"

namespace stormo::cli {
namespace {

// A client that cannot start must still read one protocol line saying why, then the exit status.
int refuse_start(const Error& error) {
    std::cout << pipe::error_line("load", true, error.message) << std::endl;
    return report_error("pipe", error);
}

}  // namespace

int run_pipe(int argc, char** argv) {
    CommonOptions common;
    common.takes_ranks = true;  // every rank of an mpirun takes part (docs/distributed.md)
    uint64_t seed = 0;
    std::optional<std::string> stats;
    po::options_description d("pipe options");
    d.add_options()("seed", po::value<UnsignedArg>()->value_name("S")->notifier([&seed](UnsignedArg v) { seed = v.value; }),
                    "the seed every sampled turn starts from (default 0)")(
        "stats", po::value<std::string>()->value_name("FILE")->notifier([&stats](const std::string& v) { stats = v; }),
        "at the end, write the expert store's counters over the whole run (hits, misses, bytes read, "
        "prefetches) as JSON to FILE");
    d.add(common_options(common));
    auto parsed = parse_command_line(
        argc, argv, "pipe", "MODEL [options]",
        "Serves one session over stdin/stdout with the line protocol:\n"
        "  READY <ctx> <vocab> <stop ids...>             once the model is loaded\n"
        "  TURN <max_new> <keep> <temp> <top_p> <top_k> <n> <ids...>\n"
        "                                                keep <keep> positions, consume the ids, generate\n"
        "  TOKEN <id>                                    each generated token, the stop id included\n"
        "  DONE <STOP|MAX_TOKENS|CONTEXT_FULL> <n_out> <pos>\n"
        "  ERROR <code> <fatal> <message>                a refused line; nothing changed\n"
        "  RESET                                         forget every position\n"
        "  SAVE <path>                                   the session to a session file: SAVED <pos> <bytes>\n"
        "  LOAD <path>                                   the session from one: LOADED <pos>\n"
        "  SHUTDOWN                                      exit 0 (so does the end of input)\n"
        "The last generated token is not consumed: send it first in the next TURN (keep = pos).",
        d, {"model"});
    if (!parsed) return report_usage_error("pipe", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if (const auto served = serve_experts_as_rank("pipe", common)) return *served;  // a rank > 0: rank 0 reads the lines
    if (auto checked = check_outputs({{"--stats", stats}}); !checked) return report_usage_error("pipe", checked.error());

    auto loaded = open_engine(common);
    if (!loaded) return refuse_start(loaded.error());
    Engine& engine = *loaded->engine;
    const size_t vocab = engine.model().vocab_size();
    auto stop_ids = stop_ids_of(engine.source(), vocab);
    if (!stop_ids) return refuse_start(stop_ids.error());
    auto session = engine.new_session(loaded->context);
    if (!session) return refuse_start(session.error());

    // A client that closes its end makes writes fail instead of killing the process silently.
    std::signal(SIGPIPE, SIG_IGN);
    std::ios::sync_with_stdio(false);
    const size_t context = loaded->context;
    pipe::PipeSessionFiles files{[&engine] { return engine_identity(engine); },
                                 [&engine, context] { return engine.new_session(context); }};
    pipe::PipeServer server(engine.pipeline(), std::move(*session), pipe::PipeModel{vocab, *stop_ids, seed, engine.speculation()}, std::cout,
                            std::move(files));
    if (!server.serve(std::cin)) {
        std::cerr << "stormo: pipe: the output closed; stopping" << std::endl;
        return kExitFailure;
    }
    if (server.fatal()) return report_error("pipe", *server.fatal());
    if (stats) {
        JsonWriter json;
        json.begin_object();
        const ExpertStoreStats store = engine.store().stats();
        store_stats_fields(json, store);
        const SpeculationStats& spec = server.speculation();
        write_speculation(json, spec, engine.speculation().mode, server.generated(),
                          gigabytes_read(engine, spec.verify_steps + spec.plain_steps, store.hits + store.misses));
        json.end_object();
        if (auto w = write_file(*stats, json.str() + "\n"); !w) return report_error("pipe", with_context(w.error(), "--stats"));
    }
    return 0;
}

}  // namespace stormo::cli
