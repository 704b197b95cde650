// stormo serve: the OpenAI-compatible HTTP server (host/src/serve). This file reads the options,
// binds the port, loads the model while /health already answers, and waits for SIGTERM.
#include <filesystem>
#include <iostream>
#include <limits>
#include <thread>

#include "cli/chat_command.hpp"
#include "cli/commands.hpp"
#include "runtime/engine_identity.hpp"
#include "runtime/generation.hpp"
#include "runtime/prompt_cache.hpp"
#include "serve/api_routes.hpp"
#include "serve/cors.hpp"
#include "serve/http_server.hpp"
#include "serve/server_log.hpp"
#include "util/format_bytes.hpp"

namespace stormo::cli {
namespace {

// Rewind slack for the server's session: requests rewind past the last answer as a chat does.
constexpr size_t kServeRewindSlack = 512;

struct ServeOptions {
    std::string host = "127.0.0.1";
    int port = 8080;
    std::vector<std::string> api_keys;
    int64_t max_queue = 16;
    std::optional<int64_t> ctx;
    int64_t timeout_seconds = 30;
    int64_t header_timeout_seconds = 5;
    std::string max_body = "8MiB";
    std::string tokenize_budget = "32MiB";
    int64_t shutdown_grace_seconds = 10;
    std::optional<int64_t> parallel;  // absent: chosen from memory
    std::optional<std::string> cache_dir;
    std::optional<std::string> cache_size;    // default 8GiB
    std::optional<std::string> cache_memory;  // default 0: no memory tier
    std::optional<int64_t> cache_block;       // default PromptCacheSettings::block_positions
    bool cache_share = false;
    std::optional<std::string> alias;          // the served model's id; default: the model directory's name
    std::vector<std::string> cors_origins;
    std::string log_format = "text";
};



// The most sequences --parallel takes: each holds a session of the whole context.
constexpr int64_t kMaxParallel = 256;

void add_serve_options(po::options_description& d, ServeOptions& out) {
    d.add_options()
        ("host", po::value<std::string>(&out.host)->value_name("ADDR"), "address to listen on (default 127.0.0.1: this machine only)")
        ("port", po::value<int>(&out.port)->value_name("P"), "TCP port (default 8080; 0 picks a free one, printed at start)")
        ("api-key", po::value<std::vector<std::string>>(&out.api_keys)->value_name("KEY")->composing(),
         "every route but /health and the chat page needs the header Authorization: Bearer KEY (may be given several times: "
         "each key its own prompt cache partition unless --cache-share)")
        ("cache-dir", po::value<std::string>()->value_name("DIR")->notifier([&out](const std::string& v) { out.cache_dir = v; }),
         "keep the KV of prompt prefixes in DIR (the server's alone), restored bit for bit by later requests "
         "and after restarts (docs/serve.md: Prompt cache)")
        ("cache-size", po::value<std::string>()->value_name("SIZE")->notifier([&out](const std::string& v) { out.cache_size = v; }),
         "the prompt cache's disk cap, least recently used blocks evicted first (default 8GiB)")
        ("cache-memory", po::value<std::string>()->value_name("SIZE")->notifier([&out](const std::string& v) { out.cache_memory = v; }),
         "RAM for the most recently used prompt cache blocks besides the disk (default 0: none)")
        ("cache-block", po::value<int64_t>()->value_name("N")->notifier([&out](int64_t v) { out.cache_block = v; }),
         "positions per prompt cache block, a multiple of 16 (default 32): a hit restores whole blocks, so a "
         "prompt that differs from a cached one computes again from the start of the block it differs in")
        ("cache-share", po::bool_switch(&out.cache_share),
         "requests of every API key share the prompt cache and each other's slot KV (off: each key its own)")
        ("max-queue", po::value<int64_t>(&out.max_queue)->value_name("N"),
         "requests that may wait for a slot besides those running (default 16); more get HTTP 429")
        ("parallel", po::value<int64_t>()->value_name("N")->notifier([&out](int64_t v) { out.parallel = v; }),
         "requests generated at once, batched in one forward pass, each with a KV cache of the whole context "
         "(default: as many as fit beside a minimum expert budget, at most 4)")
        ("ctx", po::value<int64_t>()->value_name("N")->notifier([&out](int64_t v) { out.ctx = v; }),
         "the same as --context: the KV context every request shares")
        ("timeout", po::value<int64_t>(&out.timeout_seconds)->value_name("SECONDS"),
         "time to read a whole request or write one piece of a reply (default 30)")
        ("header-timeout", po::value<int64_t>(&out.header_timeout_seconds)->value_name("SECONDS"),
         "time to read a request's line and headers, also the keep-alive idle limit (default 5)")
        ("max-body", po::value<std::string>(&out.max_body)->value_name("SIZE"), "largest request body (default 8MiB); more get HTTP 413")
        ("tokenize-budget", po::value<std::string>(&out.tokenize_budget)->value_name("SIZE"),
         "bytes of request bodies parsed and tokenized at once (default 32MiB); past it HTTP 429")
        ("shutdown-grace", po::value<int64_t>(&out.shutdown_grace_seconds)->value_name("SECONDS"),
         "on SIGTERM, how long the answer being generated may run on before it is cut (default 10)")
        ("alias", po::value<std::string>()->value_name("NAME")->notifier([&out](const std::string& v) { out.alias = v; }),
         "the served model's id in /v1/models and responses (default: the model directory's or file's name)")
        ("cors-origin", po::value<std::vector<std::string>>(&out.cors_origins)->value_name("ORIGIN")->composing(),
         "let pages of ORIGIN (https://app.example.com, or * for any) call the API from a browser; "
         "may be given several times (default: no CORS headers)")
        ("log-format", po::value<std::string>(&out.log_format)->value_name("text|json"),
         "stderr while serving: text (default) or one JSON object per line; either way a line per request");
}

Expected<serve::HttpServerOptions> http_options(const ServeOptions& o) {
    serve::HttpServerOptions h;
    if (o.port < 0 || o.port > 65535) return out_of_range("--port", o.port, 0, 65535);
    if (o.timeout_seconds < 1 || o.timeout_seconds > 3600) return out_of_range("--timeout", o.timeout_seconds, 1, 3600, " seconds");
    if (o.header_timeout_seconds < 1 || o.header_timeout_seconds > 3600)
        return out_of_range("--header-timeout", o.header_timeout_seconds, 1, 3600, " seconds");
    STORMO_TRY_ASSIGN(SizeSpec body, parse_size(o.max_body, "--max-body"));
    if (body.kind != SizeSpec::Kind::bytes || body.bytes < 1024 || body.bytes > (uint64_t{1} << 30))
        return fail(ErrorKind::invalid_argument, "--max-body must be a size from 1KiB to 1GiB");
    h.host = o.host;
    h.port = static_cast<uint16_t>(o.port);
    h.timeout = std::chrono::seconds(o.timeout_seconds);
    h.header_timeout = std::chrono::seconds(o.header_timeout_seconds);
    h.body_limit = body.bytes;
    // Room for every connection that may wait in the queue, those running, and a few more for
    // /health, /metrics and refusals.
    h.max_connections = static_cast<size_t>(o.max_queue) + static_cast<size_t>(o.parallel.value_or(kMaxAutoSequences)) + 64;
    return h;
}

Expected<uint64_t> tokenize_budget(const ServeOptions& o) {
    STORMO_TRY_ASSIGN(SizeSpec budget, parse_size(o.tokenize_budget, "--tokenize-budget"));
    if (budget.kind != SizeSpec::Kind::bytes || budget.bytes < 1024 || budget.bytes > (uint64_t{16} << 30))
        return fail(ErrorKind::invalid_argument, "--tokenize-budget must be a size from 1KiB to 16GiB");
    return budget.bytes;
}

// The prompt cache's settings (--cache-dir, --cache-size, --cache-memory); nullopt without --cache-dir.
Expected<std::optional<PromptCacheSettings>> cache_settings(const ServeOptions& o) {
    if (!o.cache_dir) return std::optional<PromptCacheSettings>();
    if (o.cache_dir->empty()) return fail(ErrorKind::invalid_argument, "--cache-dir must name a directory");
    PromptCacheSettings s;
    s.dir = *o.cache_dir;
    STORMO_TRY_ASSIGN(SizeSpec size, parse_size(o.cache_size.value_or("8GiB"), "--cache-size"));
    if (size.kind != SizeSpec::Kind::bytes || size.bytes < (uint64_t{1} << 20))
        return fail(ErrorKind::invalid_argument, "--cache-size must be a size of 1MiB or more");
    s.size_bytes = size.bytes;
    if (o.cache_block) {
        if (*o.cache_block < 16 || *o.cache_block % 16 != 0 || *o.cache_block > 65536)
            return fail(ErrorKind::invalid_argument, "--cache-block must be a multiple of 16 in [16, 65536]");
        s.block_positions = static_cast<size_t>(*o.cache_block);
    }
    if (o.cache_memory && *o.cache_memory != "0") {
        STORMO_TRY_ASSIGN(SizeSpec memory, parse_size(*o.cache_memory, "--cache-memory"));
        if (memory.kind != SizeSpec::Kind::bytes) return fail(ErrorKind::invalid_argument, "--cache-memory must be a size (0: none)");
        s.memory_bytes = memory.bytes;
    }
    return std::optional<PromptCacheSettings>(std::move(s));
}

// Opens the prompt cache for the loaded engine's sessions and says what it found there.
Expected<std::unique_ptr<PromptCache>> open_prompt_cache(PromptCacheSettings settings, const Engine& engine, const Session& session,
                                                         serve::ServerLog& log) {
    STORMO_TRY_ASSIGN(EngineIdentity identity, engine_identity(engine));
    STORMO_TRY_ASSIGN(auto cache, PromptCache::open(std::move(settings), std::move(identity), session.layout()));
    const PromptCacheStats stats = cache->stats();
    log.note("prompt cache " + cache->dir() + ": " + std::to_string(stats.disk_blocks) +
             (stats.disk_blocks == 1 ? " block, " : " blocks, ") + format_bytes(stats.disk_bytes) + " (blocks of " +
             std::to_string(cache->block_positions()) + " positions)");
    return cache;
}

Expected<void> check_serve_options(const ServeOptions& o, CommonOptions& common) {
    if (o.max_queue < 1 || o.max_queue > 4096) return out_of_range("--max-queue", o.max_queue, 1, 4096);
    if (o.shutdown_grace_seconds < 0 || o.shutdown_grace_seconds > 3600)
        return out_of_range("--shutdown-grace", o.shutdown_grace_seconds, 0, 3600, " seconds");
    for (const std::string& key : o.api_keys)
        if (key.empty()) return fail(ErrorKind::invalid_argument, "--api-key must not be empty");
    if (o.alias && (o.alias->empty() || o.alias->find_first_of(" \t\r\n") != std::string::npos))
        return fail(ErrorKind::invalid_argument, "--alias must be a name without spaces");
    for (const std::string& origin : o.cors_origins)
        if (auto problem = serve::cors_origin_problem(origin)) return fail(ErrorKind::invalid_argument, *problem);
    STORMO_TRY(serve::parse_log_format(o.log_format));
    if (!o.cache_dir && (o.cache_size || o.cache_memory || o.cache_block || o.cache_share))
        return fail(ErrorKind::invalid_argument, "--cache-size, --cache-memory, --cache-block and --cache-share need --cache-dir DIR");
    if (o.parallel && (*o.parallel < 1 || *o.parallel > kMaxParallel))
        return out_of_range("--parallel", *o.parallel, 1, kMaxParallel);
    if (o.ctx) {
        const std::string ctx = std::to_string(*o.ctx);
        if (const auto context = common.given("context"); context && *context != ctx)
            return fail(ErrorKind::invalid_argument, "--ctx and --context name different contexts; give one");
        common.settings["context"] = {ctx};
    }
    return {};
}

// Loads the engine and a session per slot (as many as the memory plan reserved KV for) and makes
// the routes ready; the server answers /health (503) meanwhile.
Expected<void> load_model(const CommonOptions& common, const ServeOptions& options, const ModelBundle& bundle,
                          const text::Tokenizer& tokenizer, serve::ApiRoutes& routes, LoadedEngine& loaded,
                          std::vector<std::unique_ptr<Session>>& sessions, const std::optional<PromptCacheSettings>& cache_options,
                          std::unique_ptr<PromptCache>& cache, serve::ServerLog& log) {
    // Without --context, each slot's context is as long as the memory allows (ContextRule).
    STORMO_TRY_ASSIGN(loaded, open_engine(common, bundle, kServeRewindSlack, ContextRule{0, true},
                                          static_cast<size_t>(options.parallel.value_or(0))));
    log.note(loaded.engine->memory().sequences_reason);
    // A token the embedding lacks fails here, not on the first request that produces it.
    STORMO_TRY(tokenizer.check_fits(loaded.engine->model().vocab_size()));
    std::vector<Session*> slots;
    for (size_t i = 0; i < loaded.engine->memory().sequences; ++i) {
        STORMO_TRY_ASSIGN(auto session, loaded.engine->new_session(loaded.context));
        slots.push_back(session.get());
        sessions.push_back(std::move(session));
    }
    STORMO_TRY_ASSIGN(std::vector<int32_t> stop_ids,
                      stop_ids_of(loaded.engine->source(), loaded.engine->model().vocab_size()));
    STORMO_TRY(tokenizer.check_stop_ids(stop_ids));
    if (cache_options) {
        STORMO_TRY_ASSIGN(cache, open_prompt_cache(*cache_options, *loaded.engine, *sessions.front(), log));
    }
    // The engine's slack: the server's, plus the drafts' when speculation is on (the KV ledger counts it).
    routes.set_ready(*loaded.engine, std::move(slots), std::move(stop_ids), loaded.engine->rewind_slack(), cache.get());
    return {};
}

}  // namespace

int run_serve(int argc, char** argv) {
    CommonOptions common;
    common.takes_ranks = true;  // every rank of an mpirun takes part (docs/distributed.md)
    ServeOptions serve_options;
    po::options_description d("serve options");
    add_serve_options(d, serve_options);
    d.add(common_options(common));
    auto parsed = parse_command_line(argc, argv, "serve", "MODEL [--host H] [--port P] [--api-key KEY] [options]",
                                     "An OpenAI-compatible HTTP server (docs/serve.md): /v1/chat/completions,\n"
                                     "/v1/completions, /v1/models, /tokenize, /detokenize, /health, /metrics.\n"
                                     "SIGTERM or Ctrl-C stops it.",
                                     d, {"model"});
    if (!parsed) return report_usage_error("serve", parsed.error());
    if (*parsed == ParseResult::help_shown) return 0;
    if (!common.model) return report_usage_error("serve", Error{ErrorKind::invalid_argument, kModelRequired});
    if (auto ok = check_serve_options(serve_options, common); !ok) return report_usage_error("serve", ok.error());
    auto http = http_options(serve_options);
    if (!http) return report_usage_error("serve", http.error());
    auto budget = tokenize_budget(serve_options);
    if (!budget) return report_usage_error("serve", budget.error());
    auto cache_options = cache_settings(serve_options);
    if (!cache_options) return report_usage_error("serve", cache_options.error());
    // A rank > 0 binds no port and opens no prompt cache: rank 0 serves the requests.
    if (const auto served = serve_experts_as_rank("serve", common)) return *served;

    // The model opened once, and its tokenizer and template first: a broken one fails before the
    // port is taken.
    auto bundle = open_model_bundle(common);
    if (!bundle) return report_error("serve", bundle.error());
    auto model_text = std::make_unique<text::ModelText>(bundle->text());
    auto tokenizer = text::Tokenizer::from_model_text(*model_text);
    if (!tokenizer) return report_error("serve", tokenizer.error());
    auto chat_template = text::ChatTemplate::from_model_text(*model_text);
    if (!chat_template) return report_error("serve", chat_template.error());
    model_text.reset();  // the texts are parsed: their bytes need not stay for the server's life

    serve::ServerLog log(*serve::parse_log_format(serve_options.log_format), std::cerr);
    serve::RouteSettings settings;
    settings.model_name = serve_options.alias.value_or(model_name(*common.model));
    settings.cors_origins = serve_options.cors_origins;
    settings.log = &log;
    settings.api_keys = serve_options.api_keys;
    settings.cache_share = serve_options.cache_share;
    settings.max_queue = static_cast<size_t>(serve_options.max_queue);
    settings.tokenize_budget = *budget;
    // Declared before the routes: their worker uses it until they are destroyed.
    std::unique_ptr<PromptCache> cache;
    serve::ApiRoutes routes(*tokenizer, *chat_template, settings);
    auto server = serve::HttpServer::bind(*http, routes);
    if (!server) return report_error("serve", server.error());
    // A lost rank (docs/distributed.md) stops the server as SIGTERM would; it then exits non-zero.
    routes.on_rank_lost([&server] { (*server)->stop(); });
    log.note("listening on http://" + http->host + ":" + std::to_string((*server)->port()) + " (loading " + *common.model + ")");

    const auto grace = std::chrono::seconds(serve_options.shutdown_grace_seconds);
    std::thread network([&] { (*server)->run([&] { routes.shutdown(grace); }); });
    LoadedEngine loaded;
    std::vector<std::unique_ptr<Session>> sessions;
    auto ready = load_model(common, serve_options, *bundle, *tokenizer, routes, loaded, sessions, *cache_options, cache, log);
    if (!ready) {
        (*server)->stop();
        network.join();
        return report_error("serve", ready.error());
    }
    log.note("ready: " + settings.model_name + ", context " + std::to_string(sessions.front()->capacity()) + " tokens, " +
             std::to_string(sessions.size()) + (sessions.size() == 1 ? " slot" : " slots"));
    network.join();
    if (routes.rank_lost()) {
        log.note("stopped: a rank was lost; exiting non-zero for the supervisor to start the server again");
        return kExitFailure;
    }
    log.note("stopped");
    return 0;
}

}  // namespace stormo::cli
