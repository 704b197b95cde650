#include "serve/inference_worker.hpp"

#include <optional>

#include "runtime/generation.hpp"
#include "serve/peer_probe.hpp"
#include "serve/stop_sequences.hpp"

namespace stormo::serve {
namespace {

// Turns generated ids into reply pieces: the reply parser for chats (reasoning, answer, tool
// calls), the plain decoder for text completions (special tokens dropped).
class PieceReader {
public:
    PieceReader(const text::Tokenizer& tokenizer, text::ReplyFormat format, Endpoint endpoint)
        : decoder_(tokenizer, /*skip_special=*/true) {
        if (endpoint == Endpoint::chat) parser_.emplace(tokenizer, format);
    }
    Expected<std::vector<text::ReplyPiece>> push(int32_t id) {
        if (parser_) return parser_->push(id);
        STORMO_TRY_ASSIGN(std::string text, decoder_.push(id));
        return pieces_of(std::move(text));
    }
    std::vector<text::ReplyPiece> finish() { return parser_ ? parser_->finish() : pieces_of(decoder_.finish()); }
    std::vector<text::ToolCall> tool_calls() const { return parser_ ? parser_->reply().tool_calls : std::vector<text::ToolCall>{}; }

private:
    static std::vector<text::ReplyPiece> pieces_of(std::string text) {
        std::vector<text::ReplyPiece> pieces;
        if (!text.empty()) pieces.push_back({text::ReplyPiece::Kind::content, std::move(text)});
        return pieces;
    }
    text::StreamDecoder decoder_;
    std::optional<text::ReplyParser> parser_;
};

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
    if (job.client_gone())
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

    PieceReader reader(*ctx_.tokenizer, ctx_.format, req.endpoint);
    StopMatcher stops(req.stop);
    std::optional<Error> parse_error;
    auto deliver = [&](text::ReplyPiece piece) {
        if (piece.kind == text::ReplyPiece::Kind::content) {
            if (stops.matched()) return;
            StopMatcher::Result r = stops.push(piece.text);
            if (r.matched) job.stop_after_token();
            piece.text = std::move(r.text);
        }
        if (piece.text.empty()) return;
        (piece.kind == text::ReplyPiece::Kind::content ? result.content : result.reasoning) += piece.text;
        job.post(std::move(piece));
    };
    auto on_token = [&](int32_t id) {
        ++result.completion_tokens;
        if (!parse_error) {
            auto pieces = reader.push(id);
            if (!pieces)
                parse_error = pieces.error();
            else
                for (auto& piece : *pieces) deliver(std::move(piece));
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
    for (auto& piece : reader.finish()) deliver(std::move(piece));
    if (std::string rest = stops.flush(); !rest.empty()) deliver({text::ReplyPiece::Kind::content, std::move(rest)});
    result.tool_calls = reader.tool_calls();

    ctx_.metrics->add_generation({result.prompt_tokens,
                                  generated->reused_positions, generated->tokens.size(), generated->prefill_seconds,
                                  generated->decode_seconds});
    if (job.shut_down() && generated->reason == StopReason::cancelled && !stops.matched()) {
        ApiError error;
        error.status = 503;
        error.type = "server_error";
        error.code = "server_shutting_down";
        error.message = "the server is shutting down; the answer was cut short";
        result.error = error;
        return result;
    }
    if (stops.matched() || generated->reason == StopReason::stop)
        result.finish = result.tool_calls.empty() ? FinishReason::stop : FinishReason::tool_calls;
    else if (generated->reason == StopReason::max_tokens)
        result.finish = FinishReason::length;
    else
        result.finish = FinishReason::cancelled;
    return result;
}

}  // namespace stormo::serve
