#include "runtime/sequence_generation.hpp"

#include <algorithm>
#include <limits>

namespace stormo {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

Expected<SequenceGeneration> SequenceGeneration::begin(Session& session, const GenerationRequest& request,
                                                       std::function<void(int32_t)> on_token) {
    if (request.prompt.empty()) return stormo::fail(ErrorKind::invalid_argument, "the prompt is empty");
    STORMO_TRY(validate(request.sampling));
    const size_t start = request.whole_context ? reusable_prefix(session.tokens(), request.prompt) : session.position();
    const std::span<const int32_t> fresh = std::span<const int32_t>(request.prompt).subspan(request.whole_context ? start : 0);
    // Checked before anything runs: a request never silently stops short of max_tokens.
    const size_t needed = fresh.size() + request.max_tokens;
    if (needed > session.capacity() - start)
        return stormo::fail(ErrorKind::resource,
                            "prompt of " + std::to_string(request.whole_context ? request.prompt.size() : fresh.size()) +
                                " tokens + " + std::to_string(request.max_tokens) + " new tokens exceed the context of " +
                                std::to_string(session.capacity()) +
                                (request.whole_context ? std::string() : " (" + std::to_string(start) + " already used)"));
    SequenceGeneration g;
    if (request.whole_context) {
        session.rewind(start);
        g.result_.reused_positions = start;
    }
    g.session_ = &session;
    g.request_ = &request;
    g.on_token_ = std::move(on_token);
    g.sampler_.emplace(request.sampling);
    g.start_ = start;
    g.fresh_ = fresh;
    g.history_ = request.prompt;
    // Greedy without a repetition penalty needs only the logits' argmax, which the pipeline finds
    // without computing every logit when it reads the head by bound; sampling, the penalty and
    // --dump and logprobs keep the full logits (docs/head_bound.md); a constraint masks the full
    // logits before the choice.
    g.by_argmax_ = takes_argmax(request.sampling) && request.tracer == nullptr && request.constraint == nullptr &&
                   !request.on_logits;
    g.started_ = Clock::now();
    return g;
}

std::span<const int32_t> SequenceGeneration::next_tokens(size_t limit) const {
    if (done_) return {};
    if (prompt_done_ < fresh_.size()) return fresh_.subspan(prompt_done_, std::min(limit, fresh_.size() - prompt_done_));
    return std::span<const int32_t>(&last_token_, 1);
}

bool SequenceGeneration::cancel_requested() const {
    return request_->cancel != nullptr && request_->cancel->load(std::memory_order_relaxed);
}

void SequenceGeneration::cancel() {
    if (!done_) finish(StopReason::cancelled);
}

void SequenceGeneration::consumed(size_t n, std::span<const float> logits, int32_t argmax) {
    if (done_) return;
    const bool output = wants_output(n);
    if (prompt_done_ < fresh_.size()) {
        prompt_done_ += n;
        if (prompt_done_ < fresh_.size()) return;
        prompt_finished_ = Clock::now();
        result_.prefill_seconds = seconds_between(started_, prompt_finished_);
        if (request_->max_tokens == 0) {  // the prompt's KV was all that was asked
            finish(StopReason::max_tokens);
            return;
        }
    }
    if (!output) return;
    int32_t token = argmax;
    if (request_->constraint) {
        masked_.assign(logits.begin(), logits.end());
        if (auto ok = request_->constraint->mask(masked_); !ok) return fail(ok.error());
        token = sampler_->sample(masked_, history_);
        if (auto ok = request_->constraint->accept(token); !ok) return fail(ok.error());
    } else if (!by_argmax_) {
        token = sampler_->sample(logits, history_);
    }
    result_.tokens.push_back(token);
    history_.push_back(token);
    last_token_ = token;
    if (request_->on_logits) request_->on_logits(logits, token);
    if (on_token_) on_token_(token);
    const auto& stops = request_->stop_ids;
    if (std::find(stops.begin(), stops.end(), token) != stops.end()) finish(StopReason::stop);
    else if (request_->constraint && request_->constraint->complete()) finish(StopReason::stop);
    else if (cancel_requested()) finish(StopReason::cancelled);
    else if (result_.tokens.size() >= request_->max_tokens) finish(StopReason::max_tokens);
}

void SequenceGeneration::fail(Error error) {
    session_->rewind(start_);
    error_ = std::move(error);
    done_ = true;
}

void SequenceGeneration::finish(StopReason reason) {
    result_.reason = reason;
    done_ = true;
    if (!result_.tokens.empty()) result_.decode_seconds = seconds_between(prompt_finished_, Clock::now());
}

Expected<GenerationResult> SequenceGeneration::take_result() {
    if (error_) return tl::unexpected(*error_);
    return std::move(result_);
}

}  // namespace stormo
