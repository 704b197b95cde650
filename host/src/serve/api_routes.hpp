#pragma once
// The routes of `stormo serve`: the OpenAI API (chat and text completions, streamed or not, the
// model list and the model), llama-server's /tokenize and /detokenize, /health, /metrics, the chat
// page and its icon; CORS for pages elsewhere; a log line per request.
// Requests are validated and rendered to ids on the connection's thread; generations wait in the
// bounded queue for a slot of the one worker that owns the sessions.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "jinja/chat_template.hpp"
#include "runtime/engine.hpp"
#include "serve/byte_budget.hpp"
#include "serve/cors.hpp"
#include "serve/http_types.hpp"
#include "serve/inference_worker.hpp"
#include "serve/metrics.hpp"
#include "serve/prepare_request.hpp"
#include "serve/request_queue.hpp"
#include "serve/server_log.hpp"
#include "tokenizer/tokenizer.hpp"

namespace stormo::serve {

struct RouteSettings {
    std::string model_name;              // what /v1/models lists and responses carry (--alias, or the model's directory)
    // Every route but /health needs one of them when any is set (--api-key, given several times).
    std::vector<std::string> api_keys;
    size_t max_queue = 16;               // requests waiting past those running; more get 429
    // Bytes of request bodies parsed and tokenized at once (ByteBudget); a body that does not fit
    // what is left gets 429, one larger than all of it 413.
    uint64_t tokenize_budget = uint64_t{32} << 20;
    // --cache-share: requests of every API key share one prompt cache partition and each other's
    // slot KV. Off: each key has its own (a cache hit's speed would tell one client what another asked).
    bool cache_share = false;
    // --cors-origin: the origins whose pages may call the API from a browser ("*": any); none: no
    // CORS header is sent.
    std::vector<std::string> cors_origins;
    // Where each request's line and the worker's notes go; none: not logged.
    ServerLog* log = nullptr;
};

class ApiRoutes {
public:
    ApiRoutes(const text::Tokenizer& tokenizer, const text::ChatTemplate& chat_template, RouteSettings settings);
    ~ApiRoutes();
    ApiRoutes(const ApiRoutes&) = delete;
    ApiRoutes& operator=(const ApiRoutes&) = delete;

    // The model is loaded: generations start being served (until then they get 503, /health too),
    // as many at once as there are sessions (slots) of the same capacity, made with `rewind_slack`.
    // `cache`: the prompt cache (--cache-dir), or none; it must outlive the routes' worker.
    void set_ready(Engine& engine, std::vector<Session*> sessions, std::vector<int32_t> stop_ids, size_t rewind_slack,
                   PromptCache* cache = nullptr);
    // Answers one request; false when the connection must close (the client is gone). Taken by
    // value: a generation drops the body once it is tokenized instead of holding it while queued.
    bool handle(HttpRequest request, ResponseSink& sink);
    // Stops taking generations: those queued are answered 503, the running ones may finish within
    // `grace`, then they are cancelled; returns once the worker has stopped.
    void shutdown(std::chrono::milliseconds grace);
    // Under mpirun (docs/distributed.md): once a request fails because a rank was lost, /health
    // answers 503, `stop_server` is called (on the worker's thread) so the server stops accepting
    // and drains, and shutdown answers the queued requests with the lost rank's 503. Set before
    // set_ready.
    void on_rank_lost(std::function<void()> stop_server);
    // The answer the lost rank's requests got, once one was lost (the server then exits non-zero).
    std::optional<ApiError> rank_lost() const;

    const Metrics& metrics() const { return metrics_; }
    // What the requests being parsed and tokenized hold of the budget (a test takes some of it).
    ByteBudget& tokenize_budget() { return budget_; }

private:
    using Clock = std::chrono::steady_clock;
    // What handle() does for the request, once it is observed for the log and CORS.
    bool dispatch(HttpRequest& request, ResponseSink& sink, RequestRecord& record, Clock::time_point arrived);
    bool handle_generation(HttpRequest& request, ResponseSink& sink, Endpoint endpoint, const std::string& partition,
                           RequestRecord& record, Clock::time_point arrived);
    // The API key the request carries, among those set; nullopt: none of them (or none set).
    std::optional<std::string_view> matching_key(const HttpRequest& request) const;
    bool reply_whole(Job& job, ResponseSink& sink, Endpoint endpoint, const std::string& id);
    bool reply_stream(Job& job, ResponseSink& sink, const CompletionRequest& request, const std::string& id);
    HttpResponse model(const std::string& id) const;
    HttpResponse embeddings() const;
    HttpResponse tokenize(const HttpRequest& request);
    HttpResponse detokenize(const HttpRequest& request);
    HttpResponse health() const;
    HttpResponse metrics_text() const;
    HttpResponse refuse(const ApiError& error, Outcome outcome);
    ApiExpected<ByteBudget::Lease> take_budget(const HttpRequest& request);
    std::string next_id(const char* prefix);
    void forget(const std::shared_ptr<Job>& job);

    const text::Tokenizer* tokenizer_;
    const text::ChatTemplate* chat_template_;
    std::optional<size_t> max_bytes_per_token_;
    RouteSettings settings_;
    CorsPolicy cors_;
    ByteBudget budget_;
    int64_t created_;  // when the server started: the model's `created`
    std::atomic<bool> ready_{false};
    std::atomic<bool> stopping_{false};
    std::atomic<size_t> context_{0};
    std::atomic<uint64_t> next_id_{1};
    RequestQueue queue_;
    Metrics metrics_;
    std::mutex lifecycle_mutex_;  // set_ready against shutdown
    std::unique_ptr<InferenceWorker> worker_;
    std::mutex jobs_mutex_;
    std::vector<std::shared_ptr<Job>> jobs_;  // queued or running, for shutdown to cancel
    std::function<void()> stop_server_;
    mutable std::mutex lost_mutex_;
    std::optional<ApiError> rank_lost_;
};

}  // namespace stormo::serve
