// stormo: the command-line entry. Subcommands live in cmd_<name>.cpp; this file only
// dispatches and answers --help / --version. Nothing escapes as an exception: a failure is one
// line on stderr and a non-zero status.
#include <exception>
#include <iostream>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "distributed/ranks.hpp"
#include "stormo/version.hpp"

namespace {

using stormo::cli::kExitFailure;
using stormo::cli::kExitUsage;

struct Command {
    const char* name;
    int (*run)(int, char**);
    const char* summary;
};

constexpr Command kCommands[] = {
    {"plugins", stormo::cli::run_plugins, "list the plugins found, their scores here and which are selected"},
    {"inspect", stormo::cli::run_inspect, "show a model's family, kernels, dimensions, tensor census and memory plan"},
    {"run", stormo::cli::run_run, "answer one message in text, with the model's chat template"},
    {"chat", stormo::cli::run_chat, "an interactive, multi-turn conversation in text"},
    {"serve", stormo::cli::run_serve, "an OpenAI-compatible HTTP server for the model"},
    {"chat-template", stormo::cli::run_chat_template, "render messages with a model's chat template"},
    {"pipe", stormo::cli::run_pipe, "one session over stdin/stdout with the line protocol, for programs embedding stormo"},
    {"tokenize", stormo::cli::run_tokenize, "text to token ids with a tokenizer.json"},
    {"detokenize", stormo::cli::run_detokenize, "token ids to text with a tokenizer.json"},
    {"generate", stormo::cli::run_generate, "generate token ids from a prompt"},
    {"logits", stormo::cli::run_logits, "teacher-forced logits (and hidden states) as .npy files"},
    {"bench", stormo::cli::run_bench, "prefill and decode speed against the memory and disk bounds"},
    {"bench-kernels", stormo::cli::run_bench_kernels, "matrix kernels' weight bytes/s against the RAM read bandwidth"},
    {"bench-session", stormo::cli::run_bench_session, "saving and restoring a session against prefill and the disk's bounds"},
    {"synth", stormo::cli::run_synth, "write a random-weight checkpoint shaped like a real model"},
    {"convert", stormo::cli::run_convert, "rewrite a model as a container laid out for streaming (one read per expert)"},
    {"cache-sim", stormo::cli::run_cache_sim, "replay route traces through the eviction policies"},
};

void print_help() {
    std::cout << "usage: stormo <command> [options]\n"
                 "       stormo <command> --help     the options of one command\n"
                 "       stormo --version\n\n"
                 "stormo runs Mixture-of-Experts language models on CPU, keeping the dense weights\n"
                 "resident and streaming routed experts from disk.\n\ncommands:\n";
    for (const Command& c : kCommands) {
        std::string name = c.name;
        name.append(name.size() < 12 ? 12 - name.size() : 1, ' ');
        std::cout << "  " << name << c.summary << "\n";
    }
    std::cout << "\nPlugins are searched in <prefix>/lib/stormo/plugins next to the program, then in\n"
                 "each directory of STORMO_PLUGIN_PATH (colon separated), then in each --plugins-dir.\n";
}

int dispatch(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "stormo: no command given (try 'stormo --help')" << std::endl;
        return kExitUsage;
    }
    const std::string_view first = argv[1];
    if (first == "--help" || first == "-h" || first == "help") {
        print_help();
        return 0;
    }
    if (first == "--version") {
        std::cout << "stormo, SDK " << stormo::kSdkVersion << ", plugin ABI " << stormo::kStormoAbi << "\n";
        return 0;
    }
    for (const Command& c : kCommands)
        if (first == c.name) return c.run(argc - 1, argv + 1);
    std::string names;
    for (const Command& c : kCommands) names += (names.empty() ? "" : ", ") + std::string(c.name);
    std::cerr << "stormo: unknown command '" << first << "' (commands: " << names << ")" << std::endl;
    return kExitUsage;
}

// A command's stdout is its result: a write that failed (a full disk, /dev/full, a closed pipe)
// must not end with status 0.
int with_stdout_checked(int status) {
    std::cout.flush();
    if (status == 0 && !std::cout) {
        std::cerr << "stormo: stdout: write failed" << std::endl;
        return kExitFailure;
    }
    return status;
}

// The commands whose every rank takes part under mpirun (docs/distributed.md); any other command
// runs on rank 0 alone, and a model command among them refuses several ranks.
bool runs_on_every_rank(int argc, char** argv) {
    if (argc < 2) return false;
    const std::string_view command = argv[1];
    return command == "generate" || command == "logits" || command == "bench" || command == "run" || command == "chat" ||
           command == "pipe" || command == "serve";
}

// serve runs its MoE stage on the inference worker's thread, the others on the command's own.
stormo::MpiThreads mpi_threads_of(int argc, char** argv) {
    return argc >= 2 && std::string_view(argv[1]) == "serve" ? stormo::MpiThreads::one_at_a_time
                                                              : stormo::MpiThreads::main_only;
}

// One rank of an MPI run: rank 0 runs the command as it runs alone; the others run it up to the
// engine, which makes them serve their experts to rank 0 until it stops them. A failed rank 0 ends
// the whole run at once (MPI_Abort), so no rank waits for it; a failed rank > 0 says why and
// leaves, and rank 0 names it when it does not answer.
int run_as_rank(int argc, char** argv) {
    auto world = stormo::RankWorld::join(argc, argv, mpi_threads_of(argc, argv));
    if (!world) {
        std::cerr << ("stormo: " + world.error().message + "\n") << std::flush;
        return kExitFailure;
    }
    const stormo::RankPlace place = (*world)->place();
    const bool takes_part = place.rank == 0 || runs_on_every_rank(argc, argv);
    const int status = takes_part ? with_stdout_checked(dispatch(argc, argv)) : 0;
    if (status != 0 && place.rank == 0 && place.ranks > 1) {
        std::cerr.flush();
        (*world)->abort(status);
    }
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (stormo::started_by_mpirun()) return run_as_rank(argc, argv);
        return with_stdout_checked(dispatch(argc, argv));
    } catch (const std::exception& e) {
        std::cerr << "stormo: internal error: " << e.what() << std::endl;
    } catch (...) {
        std::cerr << "stormo: internal error: unknown exception" << std::endl;
    }
    return kExitFailure;
}
