#include "cli/model_command.hpp"

#include <filesystem>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "cli/progress.hpp"
#include "distributed/rank_split.hpp"
#include "distributed/ranks.hpp"
#include "runtime/engine_identity.hpp"
#include "runtime/engine_settings.hpp"
#include "runtime/memory_plan.hpp"
#include "util/file.hpp"
#include "util/format_bytes.hpp"
#include "util/token_ids.hpp"

namespace stormo::cli {

size_t context_for(const EngineConfig& config, size_t run_need) {
    if (config.origins.count("context") || run_need == 0) return static_cast<size_t>(config.context);
    return run_need;
}

std::string context_origin_for(const EngineConfig& config, size_t run_need, const std::string& run_need_origin) {
    if (config.origins.count("context") || run_need == 0) return config.origin("context");
    return "the context " + run_need_origin + " need";
}

std::string model_name(const std::string& path) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
    if (ec) p = path;
    std::string name = p.filename().string();
    if (name.empty()) name = p.parent_path().filename().string();
    return name.empty() ? path : name;
}

namespace {

// Under mpirun: every rank's identity checked by rank 0, then rank 0's MoE stage linked to the
// other ranks' experts, or this rank serving its experts until rank 0 stops it.
Expected<void> join_ranks(LoadedEngine& loaded, const RankPlace& place, const ExpertSplit& split, int timeout_seconds,
                          bool verbose) {
    Engine& engine = *loaded.engine;
    STORMO_TRY_ASSIGN(const EngineIdentity identity, engine_identity(engine));
    if (place.rank != 0) {
        STORMO_TRY_ASSIGN(const ServedExperts served, serve_experts(engine, identity, split));
        // One write: the ranks end together, and mpirun passes on each rank's writes as they come.
        if (verbose)
            std::cerr << ("stormo: rank " + std::to_string(place.rank) + " computed " + std::to_string(served.works) +
                          " layer steps for rank 0; " + std::to_string(served.hints) + " prefetch hints named " +
                          std::to_string(served.hinted_experts) + " experts, " +
                          std::to_string(engine.store().stats().prefetch_issued) + " read ahead; dense part not read (" +
                          format_bytes(engine.unread_dense_bytes()) + ")\n");
        loaded.served_as_rank = true;
        return {};
    }
    STORMO_TRY_ASSIGN(loaded.remote_experts, connect_expert_owners(engine, identity, split, timeout_seconds));
    engine.pipeline().use_remote_experts(loaded.remote_experts.get());
    return {};
}

// `opened`: the model when the command opened it already (else the engine opens --model).
// from_memory: without a given context, the engine chooses it (ContextRule).
Expected<LoadedEngine> open_engine_with(const CommonOptions& options, std::shared_ptr<ModelSource> opened, size_t rewind_slack,
                                        size_t run_need, const std::string& run_need_origin, bool from_memory,
                                        size_t sequences) {
    if (!options.model) return fail(ErrorKind::invalid_argument, kModelRequired);
    STORMO_TRY_ASSIGN(auto config, resolve_engine_config(options));
    EngineOptions eo = engine_options(config);
    // Before the load: a bad --draft-max fails at once; --speculate mtp on a model without an MTP
    // layer fails in Engine::open, naming the model, before the weights load.
    STORMO_TRY(check_speculation(eo.speculation, model_name(*options.model), config.origin("speculate"), true));
    eo.speculation_origin = config.origin("speculate");
    eo.setup = setup_request(config, options);
    eo.setup.opened = std::move(opened);
    eo.context = context_for(config, run_need);
    eo.context_origin = context_origin_for(config, run_need, run_need_origin);
    if (from_memory && !config.origins.count("context")) {
        eo.context = 0;
        eo.context_need = run_need;
        eo.context_origin = "the context chosen from memory";
    }
    eo.rewind_slack = rewind_slack;
    eo.sequences = sequences;
    const RankPlace place = current_rank_place();
    std::shared_ptr<const RankShares> shares;  // this rank's share of the experts, known after the load
    if (place.ranks > 1) {
        if (!options.takes_ranks)
            return fail(ErrorKind::unsupported, "this command does not run on several ranks (generate, logits, bench, run, "
                                                "chat, pipe and serve do: docs/distributed.md); start it without mpirun");
        shares = share_experts(eo, place.rank, place.ranks, eo.rank_split);
        // A rank other than 0 computes experts only: its dense part would never be read. (An MTP
        // layer is rank 0's alone, experts included: its draft pipeline runs there.)
        if (place.rank != 0) eo.dense_weights = DenseWeights::placeholders;
    }
    // Every model command loads here, so every one shows the load the same way, on a terminal.
    TerminalProgress progress;
    if (progress.enabled()) {
        const std::string what = "loading " + model_name(*options.model) + ":";
        eo.on_load_progress = [&progress, what](uint64_t read, uint64_t to_read) { progress.bytes(what, read, to_read); };
    }
    auto engine_or_error = Engine::open(eo);
    progress.clear();
    STORMO_TRY_ASSIGN(auto engine, std::move(engine_or_error));
    if (options.verbose) {
        Engine& e = *engine;
        const ExpertStoreStats store = e.store().stats();
        // Composed first and written once: under mpirun every rank prints it at about the same time.
        std::ostringstream line;
        line << "stormo: " << e.family_name() << " on " << e.kernels_name() << " kernels, " << e.threads()
             << " threads; context " << e.memory().context << " (" << e.memory().context_reason << "); expert budget "
             << describe_budget(e.expert_budget(), store.slots, e.store().streams() ? store.slot_bytes : 0, false);
        if (!e.pinned_cpus().empty()) {
            line << "; workers pinned to CPU";
            for (const int cpu : e.pinned_cpus()) line << " " << cpu;
        }
        if (e.store().streams()) line << ", " << (store.direct_io ? "O_DIRECT" : "buffered") << " reads";
        line << "\n";
        std::cerr << line.str();
    }
    const size_t context = engine->memory().context;
    LoadedEngine loaded{std::move(config), std::move(engine), context, eo.context_origin};
    if (place.ranks > 1) {
        // The weighted split's figures, one line per rank, so a run says where its experts went. Each
        // line is composed first and written once: the other ranks print at the same moment, and a
        // line written in pieces came out with another rank's line inside it.
        if (place.rank == 0)
            for (const std::string& line : describe_shares(*shares)) std::cerr << ("stormo: " + line + "\n");
        STORMO_TRY(join_ranks(loaded, place, shares->split, eo.rank_timeout_seconds, options.verbose));
    }
    return loaded;
}

}  // namespace

Expected<LoadedEngine> open_engine(const CommonOptions& options, size_t rewind_slack, size_t run_need,
                                   const std::string& run_need_origin, size_t sequences) {
    return open_engine_with(options, nullptr, rewind_slack, run_need, run_need_origin, false, sequences);
}

Expected<LoadedEngine> open_engine(const CommonOptions& options, const ModelBundle& bundle, size_t rewind_slack,
                                   const ContextRule& context, size_t sequences) {
    return open_engine_with(options, bundle.source(), rewind_slack, context.need, "the prompt + --max-tokens",
                            context.from_memory, sequences);
}

std::optional<int> serve_experts_as_rank(const std::string& command, const CommonOptions& common) {
    const RankPlace place = current_rank_place();
    if (place.rank == 0) return std::nullopt;
    // No session is made here: a position's worth of context unless --context says otherwise,
    // so the memory plan leaves the rest to the experts.
    auto loaded = open_engine(common, 0, 1, "a rank that serves experts");
    if (!loaded) return report_error(command, loaded.error());
    return 0;
}

Expected<ModelBundle> open_model_bundle(const CommonOptions& options) {
    if (!options.model) return fail(ErrorKind::invalid_argument, kModelRequired);
    // The family plugins map a GGUF model; the engine's set-up finds them again for its own
    // selection (a second discovery of the same libraries, not a second parse of the model).
    STORMO_TRY_ASSIGN(const auto config, resolve_engine_config(options));
    STORMO_TRY_ASSIGN(const PluginRegistry plugins, discover_plugins(config, options));
    auto bundle = ModelBundle::open(*options.model, plugins.families());
    if (!bundle) return tl::unexpected(with_model_context(bundle.error(), "--model", *options.model));
    return bundle;
}

void add_sampling_options(po::options_description& d, SamplingParams& out) {
    d.add_options()
        ("temperature,temp", po::value<float>(&out.temperature)->value_name("T"), "0 (default) is greedy (also --temp T)")
        ("top-k", po::value<int>(&out.top_k)->value_name("K"), "keep the K most likely tokens (0: off)")
        ("top-p", po::value<float>(&out.top_p)->value_name("P"), "nucleus sampling (1: off)")
        ("min-p", po::value<float>(&out.min_p)->value_name("P"), "drop tokens below P x the top probability (0: off)")
        ("repeat-penalty", po::value<float>(&out.repetition_penalty)->value_name("R"), "repetition penalty (1: off)")
        ("repeat-last-n", po::value<int>(&out.repetition_window)->value_name("N"), "tokens the penalty looks back at (64)")
        ("seed,s", po::value<UnsignedArg>()->value_name("S")->notifier([&out](UnsignedArg v) { out.seed = v.value; }), "random seed for sampling (0)");
}

void add_token_input(po::options_description& d, TokenInput& out) {
    d.add_options()
        ("ids", po::value<std::string>()->value_name("LIST")->notifier([&out](const std::string& v) { out.list = v; }),
         "prompt token ids, comma-separated")
        ("ids-file", po::value<std::string>()->value_name("FILE")->notifier([&out](const std::string& v) { out.file = v; }),
         "a file of prompt token ids separated by whitespace or commas (- reads stdin)");
}

Expected<std::vector<int32_t>> read_token_ids(const TokenInput& input) {
    if (input.list && input.file) return fail(ErrorKind::invalid_argument, "give --ids or --ids-file, not both");
    if (input.list) return parse_token_ids(*input.list, "--ids");
    if (input.file) {
        // "-" is stdin; a file must be a regular one. Both are read up to a cap, so /dev/zero or a
        // stray huge file is refused instead of filling the memory.
        auto text = *input.file == "-" ? read_stream(STDIN_FILENO, "stdin", kIdsReadCap, "an ids file")
                                       : read_file(*input.file, kIdsReadCap, "an ids file");
        if (!text) return tl::unexpected(with_context(text.error(), "--ids-file"));
        return parse_token_ids(*text, "--ids-file " + *input.file);
    }
    return fail(ErrorKind::invalid_argument, "--ids LIST or --ids-file FILE is required");
}


void add_dump_options(po::options_description& d, DumpOptions& out, const char* position_help) {
    d.add_options()
        ("dump", po::value<std::string>()->value_name("DIR")->notifier([&out](const std::string& v) { out.dir = v; }),
         "write per-layer intermediates of one position as .npy files into DIR")
        ("dump-position", po::value<int64_t>(&out.position)->value_name("P")->notifier([&out](int64_t) { out.position_given = true; }),
         position_help);
}

Expected<void> check_outputs(const std::vector<OutputPath>& outputs) {
    namespace fs = std::filesystem;
    // Under mpirun only rank 0 writes the command's files; the others leave the paths alone (two
    // ranks probing one path at once would each see the other's probe file).
    if (current_rank_place().rank != 0) return {};
    std::vector<std::pair<std::string, fs::path>> seen;  // option, the path made absolute
    for (const OutputPath& o : outputs) {
        if (!o.path) continue;
        STORMO_TRY(check_output_path(*o.path, o.option));
        std::error_code ec;
        // symlink_end: a dangling symlink's file will be created where it points.
        const fs::path canonical = fs::weakly_canonical(fs::absolute(symlink_end(*o.path), ec), ec);
        // The same path after symlinks and "..", or the same existing file under two names.
        for (const auto& [option, other] : seen) {
            std::error_code missing;  // equivalent() fails when either does not exist yet: not the same
            if ((!ec && canonical == other) || fs::equivalent(canonical, other, missing))
                return fail(ErrorKind::invalid_argument,
                            o.option + " " + *o.path + ": the same file as " + option + " (each needs its own)");
        }
        seen.emplace_back(o.option, canonical);
    }
    return {};
}

Expected<void> check_dump_dir(const DumpOptions& options, const std::vector<OutputPath>& outputs) {
    namespace fs = std::filesystem;
    if (options.position_given && options.position < 0)
        return fail(ErrorKind::invalid_argument, "--dump-position " + std::to_string(options.position) + ": must be >= 0");
    if (options.position_given && !options.dir)
        return fail(ErrorKind::invalid_argument, "--dump-position needs --dump DIR (alone it records nothing)");
    if (!options.dir) return {};
    if (options.dir->empty()) return fail(ErrorKind::invalid_argument, "--dump: needs a directory name, got an empty one");
    std::error_code ec;
    const fs::file_status status = fs::status(*options.dir, ec);
    if (fs::exists(status) && !fs::is_directory(status))
        return fail(ErrorKind::invalid_argument, "--dump " + *options.dir + ": exists and is not a directory");
    // A directory is not created through a symlink (mkdir -p refuses too): say so, not "File exists".
    if (!fs::exists(status) && fs::is_symlink(fs::symlink_status(*options.dir, ec)))
        return fail(ErrorKind::invalid_argument, "--dump " + *options.dir + ": a symlink to " +
                                                     symlink_end(*options.dir) + ", which does not exist");
    const fs::path dump = fs::weakly_canonical(fs::absolute(*options.dir, ec), ec);
    for (const OutputPath& o : outputs) {
        if (!o.path) continue;
        std::error_code other_ec;
        const fs::path file = fs::weakly_canonical(fs::absolute(symlink_end(*o.path), other_ec), other_ec);
        if (!ec && !other_ec && dump == file)
            return fail(ErrorKind::invalid_argument,
                        "--dump " + *options.dir + ": the same path as " + o.option + " (the directory would take the file's place)");
    }
    return {};
}

Expected<void> start_dump(const DumpOptions& options, int64_t default_position, std::optional<DumpTracer>& tracer) {
    if (!options.dir || current_rank_place().rank != 0) return {};  // rank 0 alone dumps (check_outputs)
    std::error_code ec;
    std::filesystem::create_directories(*options.dir, ec);
    if (ec) return fail(ErrorKind::io, "--dump " + *options.dir + ": " + ec.message());
    tracer.emplace(*options.dir, options.position >= 0 ? options.position : default_position);
    return {};
}

Expected<void> finish_dump(const std::optional<DumpTracer>& tracer) {
    if (tracer && !tracer->errors().empty()) return fail(ErrorKind::io, "--dump: " + tracer->errors().front());
    return {};
}

}  // namespace stormo::cli
