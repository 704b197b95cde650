#include "serve/inference_worker.hpp"

#include <algorithm>
#include <iostream>
#include <optional>

#include "constrain/structured_output.hpp"
#include "runtime/generation.hpp"
#include "runtime/token_logprobs.hpp"
#include "runtime/sequence_generation.hpp"
#include "serve/peer_probe.hpp"
#include "serve/reply_assembler.hpp"
#include "store/read_ahead.hpp"

namespace stormo::serve {
namespace {

ApiError server_error(const Error& e) {
    ApiError error;
    // A lost rank (docs/distributed.md) is neither the request's fault nor a bug: the server
    // cannot answer anything now and stops, for its supervisor to start it again.
    if (e.kind == ErrorKind::peer_lost) {
        error.status = 503;
        error.type = "server_error";
        error.code = "rank_lost";
        error.message = e.message + "; the server stops";
        return error;
    }
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

std::vector<KvBufferDecl> kv_buffers(const Model& model) {
    std::vector<KvBufferDecl> kv;
    for (int l = 0; l < model.n_layers(); ++l)
        for (const auto& decl : model.layer_plan(l).kv) kv.push_back(decl);
    return kv;
}

// A step's sequences store every block that ends in the step, with the experts their last rows
// chose. A recurrent state is kept only as it is at a step's end, so with one the prompt chunks
// end on the cache's block boundaries; without, they stay as long as the step allows, however
// small the blocks.
BatchSettings batch_settings(const WorkerContext& ctx) {
    BatchSettings settings = ctx.batch;
    if (ctx.cache != nullptr) {
        settings.route_boundary = ctx.cache->block_positions();
        const auto kv = kv_buffers(ctx.engine->model());
        if (std::ranges::any_of(kv, [](const KvBufferDecl& d) { return d.kind == KvBufferDecl::Kind::state; }))
            settings.chunk_boundary = ctx.cache->block_positions();
    }
    return settings;
}

TokenChoice token_choice(const text::Tokenizer& tokenizer, TokenLogprob t) {
    TokenChoice c;
    // An id the tokenizer cannot decode fails the request where the reply assembler decodes it.
    c.bytes = tokenizer.token_bytes(t.id).value_or(std::string());
    c.special = tokenizer.is_special(t.id);
    c.logprob = t.logprob;
    return c;
}

LogprobEntry logprob_entry(const text::Tokenizer& tokenizer, std::span<const float> logits, int32_t token, size_t top_n) {
    const TokenLogprobs computed = token_logprobs(logits, token, top_n);
    LogprobEntry entry;
    entry.token = token_choice(tokenizer, computed.chosen);
    for (const TokenLogprob& t : computed.top) entry.top.push_back(token_choice(tokenizer, t));
    return entry;
}

// The positions a request's session may reach: its whole prompt and every token it may generate.
size_t positions_needed(const PreparedRequest& request) { return request.prompt.size() + request.max_tokens; }

}  // namespace

// A request admitted into a slot: its generation's state and the reply assembled from its tokens.
// It stays at one address while it runs (the generation points at `request`, the token callback at it).
struct InferenceWorker::Active {
    std::shared_ptr<Job> job;
    size_t slot = 0;
    uint64_t kv_granted = 0;
    GenerationRequest request;
    std::optional<ReplyAssembler> reply;
    std::optional<Error> parse_error;
    JobResult result;
    std::optional<SequenceGeneration> sequence;
    std::optional<Error> begin_error;
};

InferenceWorker::InferenceWorker(WorkerContext context)
    : ctx_(std::move(context)),
      ledger_(kv_buffers(ctx_.engine->model()), ctx_.rewind_slack, ctx_.engine->memory().kv_bytes),
      scheduler_(ctx_.engine->pipeline(), batch_settings(ctx_)),
      slots_(ctx_.sessions.size()),
      speculation_memory_(std::make_shared<SpeculationMemory>(moe_shape_of(ctx_.engine->model()))) {
    const MoeShape shape = moe_shape_of(ctx_.engine->model());
    const double experts = static_cast<double>(shape.moe_layers * shape.experts);
    if (ctx_.metrics)
        ctx_.metrics->set_read_sizes(ctx_.engine->dense_bytes(),
                                     experts > 0 ? static_cast<double>(ctx_.engine->store().total_expert_bytes()) / experts : 0.0);
}

InferenceWorker::~InferenceWorker() { join(); }

void InferenceWorker::start() { thread_ = std::thread([this] { run(); }); }

void InferenceWorker::join() {
    if (thread_.joinable()) thread_.join();
}

void InferenceWorker::run() {
    for (;;) {
        admit();
        if (active_.empty()) {
            // Nothing runs: wait for the next request (every slot is free and its KV fits, as
            // the context check at prepare time guarantees).
            std::shared_ptr<Job> job = ctx_.queue->pop();
            if (!job) break;
            begin(std::move(job));
            continue;
        }
        step();
        retire();
    }
}

void InferenceWorker::admit() {
    for (;;) {
        const bool slot_free = std::any_of(slots_.begin(), slots_.end(), [](const SlotState& s) { return !s.busy; });
        std::shared_ptr<Job> job = ctx_.queue->try_pop([&](const Job& next) {
            return next.halt().load() || (slot_free && ledger_.fits(ledger_.bytes_for(positions_needed(next.request()))));
        });
        if (!job) return;
        begin(std::move(job));
    }
}

void InferenceWorker::begin(std::shared_ptr<Job> job) {
    auto a = std::make_unique<Active>();
    a->job = std::move(job);
    Job& j = *a->job;
    const PreparedRequest& req = j.request();
    a->result.prompt_tokens = req.prompt.size();
    for (size_t i = 0; i < slots_.size(); ++i) slots_[i].held = ctx_.sessions[i]->tokens();
    const std::optional<size_t> slot = choose_slot(slots_, req.prompt, req.partition);
    // Gone (or shut down) while it waited in the queue. (A job comes here only with a slot free:
    // admit() checks, and run() waits for one only when none runs.)
    if (j.halt().load() || !slot) {
        a->result.finish = FinishReason::cancelled;
        active_.push_back(std::move(a));
        return;
    }
    a->slot = *slot;
    // A slot another partition filled keeps nothing of it for this request.
    if (slots_[a->slot].partition != req.partition) {
        ctx_.sessions[a->slot]->rewind(0);
        slots_[a->slot].partition = req.partition;
    }
    a->kv_granted = ledger_.bytes_for(positions_needed(req));
    ledger_.grant(a->kv_granted);
    slots_[a->slot].busy = true;
    slots_[a->slot].last_used = ++admissions_;
    running_.store(running_.load() + 1);

    GenerationRequest& g = a->request;
    g.prompt = req.prompt;
    g.max_tokens = req.max_tokens;
    g.sampling = req.sampling;
    g.speculation = ctx_.engine->speculation();
    if (req.speculate) g.speculation.mode = *req.speculate;
    if (req.draft_max) g.speculation.draft_max = *req.draft_max;
    if (auto usable = check_speculation(g.speculation, "the served model", "'speculate'", ctx_.engine->draft_model() != nullptr);
        !usable)
        a->begin_error = Error{ErrorKind::invalid_argument, usable.error().message};  // the client's: a 400
    if (peer_lost_) a->begin_error = *peer_lost_;
    g.speculation_memory = speculation_memory_;
    if (!req.ignore_eos) g.stop_ids = ctx_.stop_ids;
    g.whole_context = true;
    g.cancel = &j.halt();
    if (req.grammar) {
        auto constraint = constraint_for(req, g.stop_ids);
        if (constraint) g.constraint = std::move(*constraint);
        else if (!a->begin_error) a->begin_error = constraint.error();
    }
    if (a->begin_error) {  // before anything touches the slot's session
        active_.push_back(std::move(a));
        publish();
        return;
    }
    a->reply.emplace(*ctx_.tokenizer, ctx_.format, req.endpoint, req.stop);
    Active* self = a.get();
    if (req.top_logprobs) {
        // The model's end-of-answer id closes the answer; it is not part of it (as OpenAI's lists).
        g.on_logits = [this, self](std::span<const float> logits, int32_t token) {
            const GenerationRequest& r = self->request;
            if (std::find(r.stop_ids.begin(), r.stop_ids.end(), token) != r.stop_ids.end()) return;
            LogprobEntry entry = logprob_entry(*ctx_.tokenizer, logits, token, *self->job->request().top_logprobs);
            self->result.logprobs.push_back(entry);
            self->job->post(std::move(entry));
        };
    }
    auto on_token = [this, self](int32_t id) {
        if (!self->result.first_token_at) self->result.first_token_at = std::chrono::steady_clock::now();
        ++generated_in_step_;
        ++self->result.completion_tokens;
        if (self->parse_error) return;
        auto pieces = self->reply->push(id);
        if (!pieces)
            self->parse_error = pieces.error();
        else
            for (auto& piece : *pieces) self->job->post(std::move(piece));
        if (self->reply->stopped()) self->job->stop_after_token();
    };
    // Another slot holding more of the prompt (the same system prompt) lends its KV pages: they
    // are held once and not computed again. If sharing fails the slot computes them itself.
    if (const auto donor = choose_prefix_donor(slots_, a->slot, req.prompt, req.partition))
        if (ctx_.sessions[a->slot]->share_prefix(*ctx_.sessions[donor->slot], donor->positions))
            ctx_.metrics->add_shared_prefix(donor->positions);
    if (ctx_.cache != nullptr) restore_from_cache(*a);
    auto sequence = SequenceGeneration::begin(*ctx_.sessions[a->slot], a->request, on_token, {}, ctx_.engine->pipeline().mtp());
    if (sequence) a->sequence.emplace(std::move(*sequence));
    else a->begin_error = sequence.error();
    active_.push_back(std::move(a));
    publish();
}

Expected<std::shared_ptr<TokenConstraint>> InferenceWorker::constraint_for(const PreparedRequest& request,
                                                                            const std::vector<int32_t>& stop_ids) {
    if (!vocabulary_) {
        STORMO_TRY_ASSIGN(vocabulary_, constrain::TokenTrie::from_tokenizer(*ctx_.tokenizer, ctx_.engine->model().vocab_size()));
    }
    // A text completion has no reply format around its text: the grammar holds from the first token.
    const text::ReplyFormat format = request.endpoint == Endpoint::chat ? ctx_.format : text::ReplyFormat::plain;
    return std::make_shared<constrain::StructuredOutput>(request.grammar, vocabulary_,
                                                         constrain::ReplyMarkers::of(*ctx_.tokenizer, format), stop_ids);
}

void InferenceWorker::restore_from_cache(Active& a) {
    const PreparedRequest& req = a.job->request();
    Session& session = *ctx_.sessions[a.slot];
    if (req.prompt.size() < 2) return;
    const size_t held = reusable_prefix(session.tokens(), req.prompt);
    const uint64_t dropped = ctx_.cache->stats().blocks_dropped;
    // The last prompt position is always computed: its logits choose the first token.
    auto hit = ctx_.cache->restore(session, req.prompt, req.prompt.size() - 1, held, req.partition);
    if (ctx_.cache->stats().blocks_dropped != dropped)
        note("the prompt cache dropped a block that failed its check (it is computed again): " + ctx_.cache->last_drop_reason());
    if (hit && hit->positions > 0) read_ahead_experts(ctx_.engine->store(), hit->experts);
    ctx_.metrics->set_cache(ctx_.cache->stats());
}

void InferenceWorker::capture_blocks(const BatchStep& report, const std::vector<size_t>& positions_before) {
    const size_t b = ctx_.cache->block_positions();
    for (size_t i = 0; i < active_.size(); ++i) {
        const Active& a = *active_[i];
        if (!a.sequence) continue;
        const Session& session = *ctx_.sessions[a.slot];
        if (session.position() / b == positions_before[i] / b) continue;
        std::span<const std::vector<int32_t>> experts;
        for (const BatchStep::Routed& r : report.routes)
            if (r.sequence == &*a.sequence) experts = r.experts;
        const uint64_t errors = ctx_.cache->stats().write_errors;
        if (auto captured = ctx_.cache->capture(session, positions_before[i], a.job->request().partition, experts); !captured && errors == 0)
            // Said once; the request goes on, and /metrics counts the rest.
            note("the prompt cache cannot write its blocks (counted in /metrics from now on): " + captured.error().message);
    }
    ctx_.metrics->set_cache(ctx_.cache->stats());
}

ApiError InferenceWorker::answer_for(const Error& e) {
    ApiError answer = server_error(e);
    if (e.kind == ErrorKind::peer_lost && !peer_lost_) {
        peer_lost_ = e;
        note(answer.message);
        if (ctx_.on_peer_lost) ctx_.on_peer_lost(answer);
    }
    return answer;
}

void InferenceWorker::note(const std::string& message) const {
    if (ctx_.log != nullptr) ctx_.log->note(message, "warning");
    else std::cerr << ("stormo: " + message + "\n") << std::flush;
}

void InferenceWorker::step() {
    std::vector<SequenceGeneration*> running;
    std::vector<size_t> positions_before;
    for (const auto& a : active_) {
        if (a->sequence && !a->sequence->done()) running.push_back(&*a->sequence);
        positions_before.push_back(ctx_.sessions[a->slot]->position());
    }
    generated_in_step_ = 0;
    const BatchStep report = scheduler_.step(running);
    if (ctx_.cache != nullptr) capture_blocks(report, positions_before);
    if (report.sequences > 0) ctx_.metrics->add_step(report, generated_in_step_, ctx_.engine->store().stats());
    // Between steps: a client that left stops its request before the next step.
    for (const auto& a : active_)
        if (!a->job->client_gone() && peer_closed(a->job->client_fd())) a->job->cancel_client_gone();
    publish();
}

void InferenceWorker::retire() {
    for (auto it = active_.begin(); it != active_.end();) {
        Active& a = **it;
        // A cancel the step did not see yet (the client left after it) ends the sequence now.
        if (a.sequence && !a.sequence->done() && a.sequence->cancel_requested()) a.sequence->cancel();
        if (a.sequence && !a.sequence->done()) {
            ++it;
            continue;
        }
        if (a.sequence || a.begin_error) {  // it held a slot
            slots_[a.slot].busy = false;
            ledger_.release(a.kv_granted);
            running_.store(running_.load() - 1);
        }
        settle(*a.job, conclude(a));
        it = active_.erase(it);
    }
    publish();
}

JobResult InferenceWorker::conclude(Active& a) {
    JobResult result = std::move(a.result);
    if (a.begin_error) {
        result.error = answer_for(*a.begin_error);
        return result;
    }
    if (!a.sequence) return result;  // halted before it started: cancelled
    auto generated = a.sequence->take_result();
    if (!generated) {
        result.error = answer_for(generated.error());
        return result;
    }
    if (a.parse_error) {
        result.error = answer_for(*a.parse_error);
        return result;
    }
    Job& job = *a.job;
    for (auto& piece : a.reply->finish()) job.post(std::move(piece));
    result.content = a.reply->content();
    result.reasoning = a.reply->reasoning();
    result.tool_calls = a.reply->tool_calls();
    result.cached_tokens = generated->reused_positions;
    ctx_.metrics->add_generation({result.prompt_tokens, generated->reused_positions, generated->tokens.size(),
                                  generated->prefill_seconds, generated->decode_seconds});
    ctx_.metrics->add_speculation(generated->speculation);
    if (job.shut_down() && generated->reason == StopReason::cancelled && !a.reply->stopped()) result.error = shutdown_error();
    result.finish = finish_reason(generated->reason, a.reply->stopped(), !result.tool_calls.empty());
    return result;
}

void InferenceWorker::settle(Job& job, JobResult result) {
    Outcome outcome = Outcome::ok;
    if (job.client_gone() || (job.shut_down() && result.error))
        outcome = Outcome::cancelled;
    else if (result.error)
        outcome = result.error->status >= 500 ? Outcome::failed : Outcome::client_error;
    ctx_.metrics->count(outcome);
    ctx_.metrics->set_store(ctx_.engine->store().stats());
    job.finish(std::move(result));
}

void InferenceWorker::publish() {
    // Pages held by several slots count once.
    const std::vector<const Session*> sessions(ctx_.sessions.begin(), ctx_.sessions.end());
    kv_in_use_.store(Session::kv_bytes_in_use(sessions));
}

}  // namespace stormo::serve
