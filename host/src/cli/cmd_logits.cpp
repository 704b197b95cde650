// stormo logits: a teacher-forced pass over the given ids, logits (and hidden states) as .npy.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/model_command.hpp"
#include "util/npy.hpp"

namespace stormo::cli {

int run_logits(int argc, char** argv) {
    CommonOptions common;
    TokenInput ids;
    std::string out_path;
    std::optional<std::string> hidden_path;
    DumpOptions dump;
    po::options_description d("logits options");
    add_token_input(d, ids);
    d.add_options()
        ("out", po::value<std::string>(&out_path)->value_name("FILE.npy")->required(), "float32 [T, vocab] logits")
        ("hidden-out", po::value<std::string>()->value_name("FILE.npy")->notifier([&](const std::string& v) { hidden_path = v; }),
         "float32 [n_layers + 1, T, hidden]: embeddings, each layer's output, the final norm's output");
    add_dump_options(d, dump, "the position --dump records (default: the last)");
    common.takes_ranks = true;  // every rank of an mpirun takes part (docs/distributed.md)
    d.add(common_options(common));
    auto parsed = parse_command_line(argc, argv, "logits", "MODEL (--ids LIST | --ids-file FILE) --out FILE.npy [options]",
                                     "Runs one teacher-forced forward pass and writes the logits of every position.", d,
                                     {"model"});
    if (!parsed) return report_usage_error("logits", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    auto tokens = read_token_ids(ids);
    if (!tokens) return report_usage_error("logits", tokens.error());
    const std::vector<OutputPath> outputs{{"--out", out_path}, {"--hidden-out", hidden_path}};
    if (auto checked = check_outputs(outputs); !checked) return report_error("logits", checked.error());
    if (auto checked = check_dump_dir(dump, outputs); !checked) return report_error("logits", checked.error());
    const int64_t T = static_cast<int64_t>(tokens->size());
    if (dump.position >= T)
        return report_usage_error("logits", Error{ErrorKind::invalid_argument, "--dump-position " + std::to_string(dump.position) +
                                                                                   " is past the last of " + std::to_string(T) + " positions"});
    std::optional<DumpTracer> tracer;
    if (auto started = start_dump(dump, T - 1, tracer); !started) return report_error("logits", started.error());

    // logits computes every row of the head: a compact copy would never be read (a bad --head
    // value is still refused by the engine configuration).
    if (!common.given("head") || head_read_from_name(*common.given("head"))) common.settings["head"] = {"exact-only"};
    auto loaded = open_engine(common, 0, tokens->size(), "the ids");
    if (!loaded) return report_error("logits", loaded.error());
    if (loaded->served_as_rank) return 0;  // a rank > 0 under mpirun: rank 0 writes the files
    Engine& engine = *loaded->engine;
    if (loaded->context < tokens->size())
        return report_error("logits", Error{ErrorKind::invalid_argument, loaded->context_origin + " " + std::to_string(loaded->context) +
                                                                   ": the " + std::to_string(tokens->size()) +
                                                                   " ids need as many positions; give a larger context"});
    auto session = engine.new_session(loaded->context);
    if (!session) return report_error("logits", session.error());

    std::vector<float> hidden;
    ForwardOptions options;
    options.all_logits = true;
    options.hidden_out = hidden_path ? &hidden : nullptr;
    options.tracer = tracer ? &*tracer : nullptr;
    auto logits = engine.pipeline().forward(**session, *tokens, options);
    if (!logits) return report_error("logits", logits.error());

    const int64_t vocab = static_cast<int64_t>(engine.model().vocab_size());
    if (auto w = write_npy(out_path, Shape{T, vocab}, *logits); !w) return report_error("logits", with_context(w.error(), "--out"));
    if (hidden_path) {
        const Shape shape{engine.model().n_layers() + 1, T, static_cast<int64_t>(engine.model().hidden_size())};
        if (auto w = write_npy(*hidden_path, shape, hidden); !w) return report_error("logits", with_context(w.error(), "--hidden-out"));
    }
    if (auto dumped = finish_dump(tracer); !dumped) return report_error("logits", dumped.error());
    if (tracer) std::cerr << "stormo logits: wrote " << tracer->written().size() << " files to " << *dump.dir << "\n";
    return 0;
}

}  // namespace stormo::cli
