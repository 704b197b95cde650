#include "serve/inference_worker.hpp"

#include <optional>

#include "runtime/generation.hpp"
#include "serve/peer_probe.hpp"
#include "serve/reply_assembler.hpp"

namespace stormo::serve {
namespace {

ApiError server_error(const Error& e) {
    ApiError error;
    // What the request asked for and the engine refused (a token id, the context) is the
    // client's; anything else is the server's.
    const bool client = e.kind == ErrorKind::invalid_argument || e.kind == ErrorKind::resource;
    error.status = client ? 400 : 500;
    error.type = client ? "invalid_request_error" : "server_error";
    error.message = e.message;
    return error;
}

ApiError shutdown_error() {
    ApiError error;
    error.status = 503;
    error.type = "server_error";
    error.code = "server_shutting_down";
    error.message = "the server is shutting down; the answer was cut short";
    return error;
}

// A stop id or a stop sequence ends an answer as "stop" ("tool_calls" when it called tools).
FinishReason finish_reason(StopReason reason, bool stop_sequence, bool called_tools) {
    if (stop_sequence || reason == StopReason::stop) return called_tools ? FinishReason::tool_calls : FinishReason::stop;
    if (reason == StopReason::max_tokens) return FinishReason::length;
    return FinishReason::cancelled;
}

}  // namespace

InferenceWorker::InferenceWorker(WorkerContext context) : ctx_(std::move(context)) {}

InferenceWorker::~InferenceWorker() { join(); }

void InferenceWorker::start() { thread_ = std::thread([this] { run(); }); }

void InferenceWorker::join() {
    if (thread_.joinable()) thread_.join();
}

void InferenceWorker::run() {
    while (std::shared_ptr<Job> job = ctx_.queue->pop()) {
        running_.store(1);
        serve(*job);
        running_.store(0);
    }
}

void InferenceWorker::serve(Job& job) {
    JobResult result = generate_reply(job);
    Outcome outcome = Outcome::ok;
    if (job.client_gone() || (job.shut_down() && result.error))
        outcome = Outcome::cancelled;
    else if (result.error)
        outcome = result.error->status >= 500 ? Outcome::failed : Outcome::client_error;
    ctx_.metrics->count(outcome);
    ctx_.metrics->set_store(ctx_.engine->store().stats());
    job.finish(std::move(result));
}

JobResult InferenceWorker::generate_reply(Job& job) {
    const PreparedRequest& req = job.request();
    JobResult result;
    result.prompt_tokens = req.prompt.size();
    if (job.halt().load()) {  // gone (or shut down) while it waited in the queue
        result.finish = FinishReason::cancelled;
        return result;
    }
    GenerationRequest g;
    g.prompt = req.prompt;
    g.max_tokens = req.max_tokens;
    g.sampling = req.sampling;
    if (!req.ignore_eos) g.stop_ids = ctx_.stop_ids;
    g.whole_context = true;
    g.cancel = &job.halt();

    ReplyAssembler reply(*ctx_.tokenizer, ctx_.format, req.endpoint, req.stop);
    std::optional<Error> parse_error;
    auto on_token = [&](int32_t id) {
        ++result.completion_tokens;
        if (!parse_error) {
            auto pieces = reply.push(id);
            if (!pieces)
                parse_error = pieces.error();
            else
                for (auto& piece : *pieces) job.post(std::move(piece));
            if (reply.stopped()) job.stop_after_token();
        }
        // Between two tokens: a client that left stops its request before the next one.
        if (peer_closed(job.client_fd())) job.cancel_client_gone();
    };
    auto generated = generate(ctx_.engine->pipeline(), *ctx_.session, g, on_token);
    if (!generated) {
        result.error = server_error(generated.error());
        return result;
    }
    if (parse_error) {
        result.error = server_error(*parse_error);
        return result;
    }
    for (auto& piece : reply.finish()) job.post(std::move(piece));
    result.content = reply.content();
    result.reasoning = reply.reasoning();
    result.tool_calls = reply.tool_calls();

    ctx_.metrics->add_generation({result.prompt_tokens, generated->reused_positions, generated->tokens.size(),
                                  generated->prefill_seconds, generated->decode_seconds});
    if (job.shut_down() && generated->reason == StopReason::cancelled && !reply.stopped())
        result.error = shutdown_error();
    result.finish = finish_reason(generated->reason, reply.stopped(), !result.tool_calls.empty());
    return result;
}

}  // namespace stormo::serve
