#include "serve/api_routes.hpp"

#include <algorithm>
#include <iterator>
#include <ctime>
#include <thread>

#include "serve/api_key.hpp"
#include "serve/chat_page.hpp"
#include "serve/favicon.hpp"
#include "serve/openai_response.hpp"
#include "serve/peer_probe.hpp"
#include "serve/sse.hpp"

namespace stormo::serve {
namespace {

// How often a connection waiting for its generation looks whether its client is still there.
constexpr std::chrono::milliseconds kWaitSlice{20};

HttpResponse json_response(int status, std::string body) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    return r;
}

HttpResponse error_response(const ApiError& error) {
    HttpResponse r = json_response(error.status, error_body(error));
    if (error.status == 429) r.headers.emplace_back("Retry-After", "1");
    if (error.status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
}

ApiError api_error(int status, std::string message, std::string type, std::optional<std::string> code = std::nullopt) {
    ApiError e;
    e.status = status;
    e.message = std::move(message);
    e.type = std::move(type);
    e.code = std::move(code);
    return e;
}

// {"tokens": [1, 2, 3]} as text::to_json writes it, without a list of Values (tens of bytes per id).
std::string tokens_json(const std::vector<int32_t>& ids) {
    std::string out = R"({"tokens": [)";
    out.reserve(out.size() + ids.size() * 8 + 2);
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += ", ";
        out += std::to_string(ids[i]);
    }
    out += "]}";
    return out;
}

// A body past the whole budget is the client's fault; one that does not fit now is the server's load.
Outcome budget_outcome(const ApiError& refusal) { return refusal.status == 429 ? Outcome::rejected : Outcome::client_error; }

// Seconds since the epoch: the `created` of a response made now.
int64_t now_seconds() { return static_cast<int64_t>(std::time(nullptr)); }

double seconds_since(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end) {
    return std::chrono::duration<double>(end - start).count();
}

// The sink a route writes to, as the connection sees it: the request's CORS headers added to
// whatever is sent, and the status kept for the log line.
class ObservedSink final : public ResponseSink {
public:
    ObservedSink(ResponseSink& inner, HttpHeaders cors, int& status) : inner_(inner), cors_(std::move(cors)), status_(status) {}
    bool send(const HttpResponse& response) override {
        status_ = response.status;
        if (cors_.empty()) return inner_.send(response);
        HttpResponse with = response;
        with.headers.insert(with.headers.end(), cors_.begin(), cors_.end());
        return inner_.send(with);
    }
    bool begin_stream(int status, std::string_view content_type, const HttpHeaders& headers) override {
        status_ = status;
        HttpHeaders with = headers;
        with.insert(with.end(), cors_.begin(), cors_.end());
        return inner_.begin_stream(status, content_type, with);
    }
    bool send_chunk(std::string_view data) override { return inner_.send_chunk(data); }
    bool end_stream() override { return inner_.end_stream(); }
    int native_handle() const override { return inner_.native_handle(); }

private:
    ResponseSink& inner_;
    HttpHeaders cors_;
    int& status_;
};

// A path segment as sent, %XX escapes decoded (a model id may hold a slash: org/name); nullopt
// when an escape is malformed.
std::optional<std::string> percent_decoded(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) return std::nullopt;
        auto hex = [](char c) -> int {
            if (c >= '0' && c <= '9') return c - '0';
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            if (c >= 'A' && c <= 'F') return c - 'A' + 10;
            return -1;
        };
        const int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

// Where the path names a model (/v1/models/ID or /models/ID): its ID as sent, else nullopt.
std::optional<std::string_view> model_path_id(std::string_view path) {
    for (std::string_view prefix : {std::string_view("/v1/models/"), std::string_view("/models/")})
        if (path.starts_with(prefix) && path.size() > prefix.size()) return path.substr(prefix.size());
    return std::nullopt;
}

ApiError loading_error() {
    return api_error(503, "the model is still loading; GET /health answers 200 once it is ready", "server_error",
                     "model_loading");
}

}  // namespace

ApiRoutes::ApiRoutes(const text::Tokenizer& tokenizer, const text::ChatTemplate& chat_template, RouteSettings settings)
    : tokenizer_(&tokenizer),
      chat_template_(&chat_template),
      max_bytes_per_token_(tokenizer.max_bytes_per_token()),
      settings_(std::move(settings)),
      cors_(settings_.cors_origins),
      budget_(settings_.tokenize_budget),
      created_(static_cast<int64_t>(std::time(nullptr))),
      queue_(settings_.max_queue) {}

ApiRoutes::~ApiRoutes() { shutdown(std::chrono::milliseconds(0)); }

void ApiRoutes::set_ready(Engine& engine, std::vector<Session*> sessions, std::vector<int32_t> stop_ids,
                          size_t rewind_slack, PromptCache* cache) {
    std::lock_guard lock(lifecycle_mutex_);
    if (stopping_.load() || worker_ || sessions.empty()) return;
    const size_t context = sessions.front()->capacity();
    WorkerContext ctx;
    ctx.engine = &engine;
    ctx.sessions = std::move(sessions);
    ctx.rewind_slack = rewind_slack;
    // One slot prefills in blocks as long as a lone forward pass's, as the server always did;
    // several share a step's rows, so a prompt holds the others up for a shorter chunk.
    if (ctx.sessions.size() == 1) ctx.batch.step_rows = ctx.sessions.front()->max_block();
    ctx.tokenizer = tokenizer_;
    ctx.format = text::detect_reply_format(*tokenizer_);
    ctx.stop_ids = std::move(stop_ids);
    ctx.queue = &queue_;
    ctx.metrics = &metrics_;
    ctx.cache = cache;
    ctx.log = settings_.log;
    ctx.on_peer_lost = [this](const ApiError& answer) {
        {
            std::lock_guard lock(lost_mutex_);
            rank_lost_ = answer;
        }
        if (stop_server_) stop_server_();
    };
    metrics_.set_store(engine.store().stats());
    if (cache != nullptr) metrics_.set_cache(cache->stats());
    worker_ = std::make_unique<InferenceWorker>(std::move(ctx));
    worker_->start();
    context_.store(context);
    ready_.store(true);
}

void ApiRoutes::shutdown(std::chrono::milliseconds grace) {
    std::lock_guard lock(lifecycle_mutex_);
    stopping_.store(true);
    const ApiError closing =
        rank_lost().value_or(api_error(503, "the server is shutting down", "server_error", "server_shutting_down"));
    for (const std::shared_ptr<Job>& job : queue_.close()) {
        job->cancel_shutdown();
        JobResult result;
        result.prompt_tokens = job->request().prompt.size();
        result.error = closing;
        job->finish(std::move(result));
    }
    if (!worker_) return;
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (worker_->running() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(kWaitSlice);
    {
        std::lock_guard jobs_lock(jobs_mutex_);
        for (const std::shared_ptr<Job>& job : jobs_) job->cancel_shutdown();
    }
    worker_->join();
}

void ApiRoutes::on_rank_lost(std::function<void()> stop_server) { stop_server_ = std::move(stop_server); }

std::optional<ApiError> ApiRoutes::rank_lost() const {
    std::lock_guard lock(lost_mutex_);
    return rank_lost_;
}

std::string ApiRoutes::next_id(const char* prefix) {
    return std::string(prefix) + std::to_string(created_) + "-" + std::to_string(next_id_.fetch_add(1));
}

void ApiRoutes::forget(const std::shared_ptr<Job>& job) {
    std::lock_guard lock(jobs_mutex_);
    std::erase(jobs_, job);
}

HttpResponse ApiRoutes::refuse(const ApiError& error, Outcome outcome) {
    metrics_.count(outcome);
    return error_response(error);
}

// A route that parses and tokenizes a body holds its size of the budget meanwhile.
ApiExpected<ByteBudget::Lease> ApiRoutes::take_budget(const HttpRequest& request) {
    const uint64_t bytes = request.body.size();
    const std::string budget = std::to_string(budget_.capacity()) + " bytes (--tokenize-budget)";
    if (bytes > budget_.capacity())
        return tl::unexpected(api_error(413, "the request body is " + std::to_string(bytes) +
                                                 " bytes, more than the server tokenizes at once: " + budget,
                                        "invalid_request_error", "tokenize_budget_exceeded"));
    if (auto lease = budget_.try_take(bytes)) return std::move(*lease);
    return tl::unexpected(api_error(429, "the server is busy tokenizing other requests' text (at most " + budget +
                                             " at once); retry later",
                                    "rate_limit_error", "tokenize_budget_busy"));
}

bool ApiRoutes::handle(HttpRequest request, ResponseSink& sink) {
    const Clock::time_point arrived = Clock::now();
    RequestRecord record;
    record.method = request.method;
    record.route = request.path;
    ObservedSink observed(sink, cors_.headers_for(request), record.status);
    const bool ok = dispatch(request, observed, record, arrived);
    record.total_seconds = seconds_since(arrived, Clock::now());
    if (settings_.log != nullptr) settings_.log->request(record);
    return ok;
}

bool ApiRoutes::dispatch(HttpRequest& request, ResponseSink& sink, RequestRecord& record, Clock::time_point arrived) {
    const std::string& path = request.path;
    const bool get = request.method == "GET";
    const bool post = request.method == "POST";
    // A browser's preflight carries no key: it asks whether the page may send one.
    if (request.method == "OPTIONS" && cors_.enabled()) return sink.send(cors_.preflight(request));
    if (path == "/health") {
        if (!get) return sink.send(refuse(api_error(405, "use GET /health", "invalid_request_error"), Outcome::client_error));
        return sink.send(health());
    }
    // The chat page and its icon hold no secret: the page asks for the key the API needs.
    if (path == "/" || path == "/favicon.ico") {
        if (!get) return sink.send(refuse(api_error(405, "use GET " + path, "invalid_request_error"), Outcome::client_error));
        HttpResponse r;
        r.content_type = path == "/" ? "text/html; charset=utf-8" : "image/svg+xml";
        r.body = std::string(path == "/" ? chat_page_html() : favicon_svg());
        return sink.send(r);
    }
    const std::optional<std::string_view> key = matching_key(request);
    if (!settings_.api_keys.empty() && !key)
        return sink.send(refuse(api_error(401, "a valid API key is required: send the header Authorization: Bearer KEY",
                                          "invalid_request_error", "invalid_api_key"),
                                Outcome::unauthorized));
    const std::string partition = settings_.cache_share || !key ? std::string() : cache_partition(*key);

    auto wrong_method = [&](const char* expected) {
        return sink.send(refuse(api_error(405, "use " + std::string(expected) + " " + path, "invalid_request_error"),
                                Outcome::client_error));
    };
    if (path == "/v1/chat/completions" || path == "/chat/completions")
        return post ? handle_generation(request, sink, Endpoint::chat, partition, record, arrived) : wrong_method("POST");
    if (path == "/v1/completions" || path == "/completions")
        return post ? handle_generation(request, sink, Endpoint::completion, partition, record, arrived) : wrong_method("POST");
    if (path == "/v1/models" || path == "/models")
        return get ? sink.send(json_response(200, models_json(settings_.model_name, created_))) : wrong_method("GET");
    if (const auto id = model_path_id(path)) return get ? sink.send(model(std::string(*id))) : wrong_method("GET");
    if (path == "/v1/embeddings" || path == "/embeddings") return sink.send(embeddings());
    if (path == "/tokenize") return post ? sink.send(tokenize(request)) : wrong_method("POST");
    if (path == "/detokenize") return post ? sink.send(detokenize(request)) : wrong_method("POST");
    if (path == "/metrics") return get ? sink.send(metrics_text()) : wrong_method("GET");
    return sink.send(refuse(api_error(404, "no route " + request.method + " " + path, "invalid_request_error", "not_found"),
                            Outcome::client_error));
}

HttpResponse ApiRoutes::model(const std::string& id) const {
    const std::optional<std::string> name = percent_decoded(id);
    if (name && *name == settings_.model_name) return json_response(200, model_json(settings_.model_name, created_));
    return error_response(api_error(404,
                                    "The model '" + name.value_or(id) + "' does not exist: this server serves " +
                                        settings_.model_name,
                                    "invalid_request_error", "model_not_found"));
}

HttpResponse ApiRoutes::embeddings() const {
    return error_response(api_error(404,
                                    "this server serves chat and text completions of " + settings_.model_name +
                                        "; embeddings are not served",
                                    "invalid_request_error", "embeddings_not_served"));
}

HttpResponse ApiRoutes::health() const {
    if (!ready_.load()) return json_response(503, R"({"status":"loading"})");
    if (rank_lost()) return json_response(503, R"({"status":"rank lost"})");
    return json_response(200, R"({"status":"ok"})");
}

HttpResponse ApiRoutes::metrics_text() const {
    MetricsGauges gauges;
    gauges.queue_depth = queue_.size();
    gauges.ready = ready_.load();
    // The worker pointer is set once, before ready_; reading it after ready_ is safe.
    if (gauges.ready && worker_) {
        gauges.running = worker_->running();
        gauges.slots = worker_->slots();
        gauges.kv_bytes_in_use = worker_->kv_bytes_in_use();
        gauges.kv_bytes_reserved = worker_->kv_bytes_reserved();
    }
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics_.render(gauges);
    return r;
}

HttpResponse ApiRoutes::tokenize(const HttpRequest& request) {
    auto lease = take_budget(request);
    if (!lease) return refuse(lease.error(), budget_outcome(lease.error()));
    auto parsed = parse_tokenize_request(request.body);
    if (!parsed) return refuse(parsed.error(), Outcome::client_error);
    std::vector<int32_t> ids = tokenizer_->encode(parsed->content, /*match_special=*/true);
    // add_special: the tokenizer's BOS first, as llama-server adds it (when the model has one).
    if (parsed->add_special && !chat_template_->bos_token().empty())
        if (auto bos = tokenizer_->token_id(chat_template_->bos_token())) ids.insert(ids.begin(), *bos);
    return json_response(200, tokens_json(ids));
}

HttpResponse ApiRoutes::detokenize(const HttpRequest& request) {
    auto lease = take_budget(request);
    if (!lease) return refuse(lease.error(), budget_outcome(lease.error()));
    auto parsed = parse_detokenize_request(request.body);
    if (!parsed) return refuse(parsed.error(), Outcome::client_error);
    auto text = tokenizer_->decode(parsed->tokens);
    if (!text) return refuse(bad_request(text.error().message, "tokens").value(), Outcome::client_error);
    return json_response(200, text::to_json(text::Value::object({{"content", text::Value(*text)}})));
}

std::optional<std::string_view> ApiRoutes::matching_key(const HttpRequest& request) const {
    // Every key is compared, whichever matches: the time says nothing about which one did.
    std::optional<std::string_view> found;
    for (const std::string& key : settings_.api_keys)
        if (bearer_matches(request.authorization, key) && !found) found = key;
    return found;
}

bool ApiRoutes::handle_generation(HttpRequest& request, ResponseSink& sink, Endpoint endpoint, const std::string& partition,
                                  RequestRecord& record, Clock::time_point arrived) {
    auto lease = take_budget(request);
    if (!lease) return sink.send(refuse(lease.error(), budget_outcome(lease.error())));
    auto parsed = endpoint == Endpoint::chat ? parse_chat_request(request.body) : parse_completion_request(request.body);
    if (!parsed) return sink.send(refuse(parsed.error(), Outcome::client_error));
    if (!ready_.load()) return sink.send(refuse(loading_error(), Outcome::rejected));
    auto prepared =
        prepare_request(*parsed, PromptText{tokenizer_, chat_template_, max_bytes_per_token_}, context_.load());
    if (!prepared) return sink.send(refuse(prepared.error(), Outcome::client_error));
    // The text is tokenized: what waits in the queue is ids, bounded by the context.
    lease->release();
    request.body = std::string();
    parsed->messages = text::Value::list();
    parsed->prompt = std::string();

    prepared->partition = partition;
    auto job = std::make_shared<Job>(std::move(*prepared), sink.native_handle());
    {
        std::lock_guard lock(jobs_mutex_);
        jobs_.push_back(job);
    }
    if (!queue_.try_push(job)) {
        forget(job);
        if (stopping_.load())
            return sink.send(refuse(api_error(503, "the server is shutting down", "server_error", "server_shutting_down"),
                                    Outcome::rejected));
        return sink.send(refuse(api_error(429,
                                          "the queue is full (" + std::to_string(queue_.capacity()) +
                                              " requests waiting); retry later",
                                          "rate_limit_error", "queue_full"),
                                Outcome::rejected));
    }
    const std::string id = next_id(endpoint == Endpoint::chat ? "chatcmpl-" : "cmpl-");
    const bool ok = parsed->stream ? reply_stream(*job, sink, *parsed, id) : reply_whole(*job, sink, endpoint, id);
    forget(job);
    if (const std::optional<JobResult>& result = job->final_result()) {
        record.prompt_tokens = result->prompt_tokens;
        record.completion_tokens = result->completion_tokens;
        if (result->first_token_at) record.first_token_seconds = seconds_since(arrived, *result->first_token_at);
    }
    return ok;
}

// Waits for the whole reply, looking between slices whether the client is still there. It returns
// only once the worker is done with the job: the worker probes this connection's socket, which
// must stay open until then.
bool ApiRoutes::reply_whole(Job& job, ResponseSink& sink, Endpoint endpoint, const std::string& id) {
    for (;;) {
        Job::Update update = job.wait(kWaitSlice);
        if (update.result) {
            if (job.client_gone()) return false;
            if (update.result->error) return sink.send(error_response(*update.result->error));
            const ResponseIdentity who{id, now_seconds(), settings_.model_name};
            const bool logprobs = job.request().top_logprobs.has_value();
            return sink.send(json_response(200, endpoint == Endpoint::chat
                                                    ? chat_completion_json(who, *update.result, logprobs)
                                                    : text_completion_json(who, *update.result, logprobs)));
        }
        if (!job.client_gone() && peer_closed(sink.native_handle())) job.cancel_client_gone();
    }
}

bool ApiRoutes::reply_stream(Job& job, ResponseSink& sink, const CompletionRequest& request, const std::string& id) {
    // Every chunk of one response carries the time it began.
    const ResponseIdentity who{id, now_seconds(), settings_.model_name};
    const bool chat = request.endpoint == Endpoint::chat;
    const bool with_logprobs = request.top_logprobs.has_value();
    // The tokens' logprobs ride on the next chunk sent after them; what no piece took, on the last.
    std::vector<LogprobEntry> unsent;
    size_t text_offset = 0;
    auto take_logprobs = [&]() -> text::Value {
        if (!with_logprobs) return text::Value();
        text::Value v = chat ? chat_logprobs_value(unsent) : text_logprobs_value(unsent, text_offset);
        unsent.clear();
        return v;
    };
    bool started = false;  // the 200 and its headers are sent with the first piece, so an early error keeps its status
    bool writable = true;
    auto write = [&](const std::string& event) {
        if (writable && !sink.send_chunk(event)) {
            writable = false;
            job.cancel_client_gone();
        }
    };
    auto start = [&] {
        if (started) return;
        started = true;
        writable = sink.begin_stream(200, "text/event-stream", {});
        if (!writable) job.cancel_client_gone();
        if (chat) write(sse_event(chat_role_chunk(who)));
    };
    for (;;) {
        Job::Update update = job.wait(kWaitSlice);
        if (!update.pieces.empty()) start();
        std::ranges::move(update.logprobs, std::back_inserter(unsent));
        for (const text::ReplyPiece& piece : update.pieces) {
            const text::Value logprobs = take_logprobs();
            write(sse_event(chat ? chat_piece_chunk(who, piece, logprobs) : text_piece_chunk(who, piece.text, logprobs)));
        }
        if (update.result) {
            const JobResult& result = *update.result;
            if (job.client_gone()) return false;
            if (result.error && !started) return sink.send(error_response(*result.error));
            start();
            if (result.error) {
                write(sse_event(error_body(*result.error)));
            } else {
                if (chat && !result.tool_calls.empty()) write(sse_event(chat_tool_calls_chunk(who, result.tool_calls)));
                const text::Value logprobs = take_logprobs();
                write(sse_event(chat ? chat_finish_chunk(who, result.finish, logprobs)
                                     : text_finish_chunk(who, result.finish, logprobs)));
                if (request.include_usage)
                    write(sse_event(chat ? chat_usage_chunk(who, result) : text_usage_chunk(who, result)));
            }
            write(sse_done());
            return writable && sink.end_stream();
        }
        if (!job.client_gone() && peer_closed(sink.native_handle())) job.cancel_client_gone();
    }
}

}  // namespace stormo::serve
