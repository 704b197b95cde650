// stormo generate: prompt ids in, generated ids out (one per line, the stop id included).
#include <iostream>

#include "cli/commands.hpp"
#include "util/json_writer.hpp"
#include "cli/speculation_json.hpp"
#include "cli/model_command.hpp"
#include "cli/store_stats_json.hpp"
#include "cli/progress.hpp"
#include "runtime/generation.hpp"
#include "runtime/memory_plan.hpp"
#include "util/file.hpp"

namespace stormo::cli {
namespace {

struct GenerateOptions {
    TokenInput ids;
    int64_t max_tokens = 128;
    SamplingParams sampling;
    std::optional<std::string> stats;
    std::optional<std::string> route_trace;
    DumpOptions dump;
    bool ignore_eos = false;
};

Expected<void> write_stats(const std::string& path, const GenerationRequest& request, const GenerationResult& result,
                           Engine& engine) {
    const auto store = engine.store().stats();
    const auto& times = engine.pipeline().times();
    const double decode_tps = result.decode_seconds > 0 && result.tokens.size() > 1
                                  ? static_cast<double>(result.tokens.size() - 1) / result.decode_seconds
                                  : 0.0;
    const double prefill_tps =
        result.prefill_seconds > 0 ? static_cast<double>(request.prompt.size()) / result.prefill_seconds : 0.0;
    JsonWriter json;
    json.begin_object()
        .field("prompt_tokens", request.prompt.size())
        .field("generated_tokens", result.tokens.size())
        .field("stop_reason", stop_reason_name(result.reason))
        .field("prefill_seconds", result.prefill_seconds)
        .field("decode_seconds", result.decode_seconds)
        .field("prefill_tokens_per_s", prefill_tps)
        .field("decode_tokens_per_s", decode_tps)
        .field("attention_seconds", times.attention_seconds)
        .field("moe_seconds", times.moe_seconds)
        .field("head_seconds", times.head_seconds);
    store_stats_fields(json, store)
        .field("prediction_accuracy", times.chosen ? static_cast<double>(times.predicted_chosen) / static_cast<double>(times.chosen) : 0.0)
        .field("expert_budget", engine.expert_budget().reason)
        .field("threads", engine.threads())
        .field("kernels", engine.kernels_name())
        .field("peak_rss_bytes", peak_rss_bytes());
    if (const RemoteExperts* remote = engine.pipeline().remote_experts()) {
        // Under mpirun (docs/distributed.md): what rank 0 exchanged with the other ranks.
        const RemoteExpertStats r = remote->stats();
        const double tokens = static_cast<double>(request.prompt.size() + result.tokens.size());
        json.key("ranks").begin_object()
            .field("layer_exchanges", r.layers)
            .field("messages_sent", r.messages_sent)
            .field("bytes_sent", r.bytes_sent)
            .field("bytes_received", r.bytes_received)
            .field("bytes_per_token", tokens > 0 ? static_cast<double>(r.bytes_sent + r.bytes_received) / tokens : 0.0)
            .field("wait_seconds", r.wait_seconds)
            .field("prefetch_hints", r.hints)
            .field("hinted_experts", r.hinted_experts)
            .end_object();
    }
    const SpeculationStats& spec = result.speculation;
    write_speculation(json, spec, request.speculation.mode, result.tokens.size(),
                      gigabytes_read(engine, spec.verify_steps + spec.plain_steps, store.hits + store.misses));
    json.end_object();
    if (auto w = write_file(path, json.str() + "\n"); !w) return tl::unexpected(with_context(w.error(), "--stats"));
    return {};
}

// The last position a generation of `max_tokens` after `prompt` tokens runs through the model: the
// last generated token is printed, never fed back.
int64_t last_forward_position(size_t prompt, int64_t max_tokens) {
    const auto p = static_cast<int64_t>(prompt);
    return max_tokens <= 1 ? p - 1 : p + max_tokens - 2;
}

// Every output is checked before the model loads: a wrong path fails in a second, not after the
// whole generation.
Expected<void> check_generate_outputs(const GenerateOptions& g, size_t prompt) {
    const std::vector<OutputPath> outputs{{"--stats", g.stats}, {"--route-trace", g.route_trace}};
    STORMO_TRY(check_outputs(outputs));
    STORMO_TRY(check_dump_dir(g.dump, outputs));
    const int64_t last = last_forward_position(prompt, g.max_tokens);
    if (g.dump.dir && g.dump.position > last)
        return fail(ErrorKind::invalid_argument, "--dump-position " + std::to_string(g.dump.position) +
                                                     " is past the last position the model runs (" + std::to_string(last) +
                                                     ": the prompt's " + std::to_string(prompt) + " tokens and " +
                                                     std::to_string(g.max_tokens) + " generated, the last not fed back)");
    return {};
}

}  // namespace

int run_generate(int argc, char** argv) {
    CommonOptions common;
    GenerateOptions g;
    po::options_description d("generate options");
    add_token_input(d, g.ids);
    d.add_options()
        ("max-tokens,n", po::value<int64_t>(&g.max_tokens)->value_name("N"), "tokens to generate at most (default 128)")
        ("ignore-eos", po::bool_switch(&g.ignore_eos), "do not stop at the model's stop ids")
        ("stats", po::value<std::string>()->value_name("FILE")->notifier([&g](const std::string& v) { g.stats = v; }),
         "write timing, expert-store and memory figures as JSON")
        ("route-trace", po::value<std::string>()->value_name("FILE")->notifier([&g](const std::string& v) { g.route_trace = v; }),
         "append each layer's chosen experts per step to FILE (for `stormo cache-sim`)");
    add_sampling_options(d, g.sampling);
    add_dump_options(d, g.dump, "the position --dump records (default: the prompt's last; a later one is a generated token's)");
    common.takes_ranks = true;  // every rank of an mpirun takes part (docs/distributed.md)
    d.add(common_options(common));
    auto parsed = parse_command_line(argc, argv, "generate", "MODEL (--ids LIST | --ids-file FILE) [options]",
                                     "Generates tokens after the prompt and prints their ids, one per line.", d,
                                     {"model"});
    if (!parsed) return report_usage_error("generate", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if (g.max_tokens <= 0) return report_usage_error("generate", Error{ErrorKind::invalid_argument, "--max-tokens must be >= 1"});
    if (auto v = validate(g.sampling); !v) return report_usage_error("generate", v.error());
    auto prompt = read_token_ids(g.ids);
    if (!prompt) return report_usage_error("generate", prompt.error());
    if (auto checked = check_generate_outputs(g, prompt->size()); !checked) return report_error("generate", checked.error());

    // Sampling, the repetition penalty and --dump need every logit (docs/head_bound.md): the
    // compact copy of the head would never be read, so it is not built.
    if ((!takes_argmax(g.sampling) || g.dump.dir) && (!common.given("head") || head_read_from_name(*common.given("head"))))
        common.settings["head"] = {"exact-only"};
    auto loaded = open_engine(common, 0, prompt->size() + static_cast<size_t>(g.max_tokens), "the prompt and --max-tokens");
    if (!loaded) return report_error("generate", loaded.error());
    if (loaded->served_as_rank) return 0;  // a rank > 0 under mpirun: rank 0 prints the ids
    Engine& engine = *loaded->engine;

    GenerationRequest request;
    request.prompt = *prompt;
    request.max_tokens = static_cast<size_t>(g.max_tokens);
    request.sampling = g.sampling;
    request.speculation = engine.speculation();
    if (!g.ignore_eos) {
        auto stops = stop_ids_of(engine.source(), engine.model().vocab_size());
        if (!stops) return report_error("generate", stops.error());
        request.stop_ids = *stops;
    }
    // Generation reserves the prompt and every token it may generate up front (it never stops short
    // of --max-tokens silently), so a given context must hold both.
    const size_t need = request.prompt.size() + request.max_tokens;
    if (loaded->context < need)
        return report_error("generate", Error{ErrorKind::invalid_argument,
                                  loaded->context_origin + " " + std::to_string(loaded->context) + ": the prompt's " +
                                      std::to_string(request.prompt.size()) + " tokens + --max-tokens " +
                                      std::to_string(request.max_tokens) + " need " + std::to_string(need) +
                                      " positions; give a context of at least " + std::to_string(need) +
                                      " or fewer --max-tokens"});
    auto session = engine.new_session(loaded->context);
    if (!session) return report_error("generate", session.error());
    std::optional<DumpTracer> tracer;
    const int64_t last_prompt = static_cast<int64_t>((*session)->position() + request.prompt.size()) - 1;
    if (auto started = start_dump(g.dump, last_prompt, tracer); !started) return report_error("generate", started.error());
    if (tracer) request.tracer = &*tracer;
    std::vector<RouteStep> trace;
    if (g.route_trace) engine.pipeline().record_routes(&trace);
    // A prefill of more than one block can take minutes on a large model: show it on a terminal.
    TerminalProgress progress;
    if (progress.enabled() && request.prompt.size() > Session::kDefaultMaxBlock)
        request.on_prefill_block = [&progress](size_t done, size_t total) {
            progress.update("prefill", done, total);
            if (done == total) progress.clear();
        };
    auto result = generate(engine.pipeline(), **session, request, [](int32_t token) { std::cout << token << '\n' << std::flush; });
    if (!result) return report_error("generate", result.error());
    if (g.route_trace)
        if (auto w = append_file(*g.route_trace, format_route_trace(trace)); !w)
            return report_error("generate", with_context(w.error(), "--route-trace"));
    if (auto dumped = finish_dump(tracer); !dumped) return report_error("generate", dumped.error());
    if (tracer && tracer->written().empty())
        return report_error("generate", Error{ErrorKind::invalid_argument,
                                  "--dump-position " + std::to_string(g.dump.position) + ": generation stopped (" +
                                      stop_reason_name(result->reason) + ") before that position; nothing was dumped"});
    if (g.stats)
        if (auto w = write_stats(*g.stats, request, *result, engine); !w) return report_error("generate", w.error());
    return 0;
}

}  // namespace stormo::cli
