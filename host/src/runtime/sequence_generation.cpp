#include "runtime/sequence_generation.hpp"

#include <algorithm>
#include <limits>

namespace stormo {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

}  // namespace

MoeShape moe_shape_of(const Model& model) {
    MoeShape shape;
    for (int l = 0; l < model.n_layers(); ++l) {
        const LayerPlan& plan = model.layer_plan(l);
        if (plan.ffn != FfnKind::moe) continue;
        if (shape.moe_layers++ == 0) {
            shape.experts = static_cast<size_t>(std::max(0, plan.n_experts));
            shape.top_k = static_cast<size_t>(std::max(0, plan.top_k));
        }
    }
    return shape;
}

Expected<SequenceGeneration> SequenceGeneration::begin(Session& session, const GenerationRequest& request,
                                                       std::function<void(int32_t)> on_token, MoeShape shape,
                                                       const MtpDraft* mtp) {
    if (request.prompt.empty()) return stormo::fail(ErrorKind::invalid_argument, "the prompt is empty");
    STORMO_TRY(validate(request.sampling));
    const SpeculationSettings& spec = request.speculation;
    // --dump traces one row a decode step: its steps stay plain.
    const bool speculating = (spec.mode != SpeculateMode::off || request.draft_source != nullptr) && request.tracer == nullptr;
    if (speculating) STORMO_TRY(check_speculation(spec, "the model", "speculation", mtp != nullptr));
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
    // A recurrent state cannot be rewound over rejected drafts without a replay: plain decoding.
    bool has_state = false;
    for (const Session::RingInfo& ring : session.ring_infos()) has_state = has_state || ring.state;
    if (speculating && !has_state) {
        g.source_ = request.draft_source ? request.draft_source
                                         : std::shared_ptr<DraftSource>(draft_source_for(spec.mode, request.constraint != nullptr,
                                                                                         mtp, session.capacity()));
        if (g.source_ && spec.mode == SpeculateMode::automatic) {
            g.memory_ = request.speculation_memory ? request.speculation_memory : std::make_shared<SpeculationMemory>(shape);
            g.gate_.emplace(spec.draft_max, g.memory_->costs, &g.memory_->acceptance);
        }
    }
    g.started_ = Clock::now();
    return g;
}

void SequenceGeneration::plan_step(size_t limit) {
    planned_verify_ = false;
    block_.assign(1, last_token_);
    if (done_ || prefilling() || source_ == nullptr || request_->max_tokens == 0) return;
    // A verify block fits the step and the session's block (so the rows it rejects lie within
    // the rings' block rows: a rewind over them needs no replay), and drafts no further than the
    // token limit.
    const size_t remaining = request_->max_tokens - std::min(request_->max_tokens, result_.tokens.size());
    const size_t room = std::min({limit > 0 ? limit - 1 : 0, session_->max_block() - 1, remaining > 0 ? remaining - 1 : 0,
                                  request_->speculation.draft_max, session_->remaining() > 0 ? session_->remaining() - 1 : 0});
    if (room == 0) {
        ++result_.speculation.gate_choices[0];
        return;
    }
    const std::span<const int32_t> held = session_->tokens();
    sequence_tokens_.assign(held.begin(), held.end());
    sequence_tokens_.push_back(last_token_);
    DraftContext ctx;
    ctx.tokens = sequence_tokens_;
    ctx.generated = result_.tokens.size();
    ctx.constraint = request_->constraint.get();
    ctx.last_hidden = last_hidden_;
    ctx.gate = gate_ ? &*gate_ : nullptr;
    std::vector<int32_t> drafts = source_->propose(ctx, room);
    if (drafts.size() > room) drafts.resize(room);
    planned_source_ = std::string(source_->name());
    if (gate_ && !drafts.empty()) drafts.resize(gate_->choose(planned_source_, drafts.size()));
    ++result_.speculation.gate_choices[drafts.size()];
    if (drafts.empty()) return;
    block_.insert(block_.end(), drafts.begin(), drafts.end());
    planned_verify_ = true;
}

SequenceStep::Want SequenceGeneration::want(size_t n) const {
    using Want = SequenceStep::Want;
    if (!wants_output(n)) return Want::nothing;
    if (planned_verify_ && !prefilling()) return by_argmax_ ? Want::all_argmax : Want::all_logits;
    return by_argmax_ ? Want::last_argmax : Want::last_logits;
}

void SequenceGeneration::observe_step(size_t rows, double seconds, uint64_t acquired, uint64_t misses) {
    if (done_) return;
    // The prompt's rows are the first steps of several rows this run times: they price a row
    // before any verify has run (a prior alone would say a row costs a whole step).
    if (prefilling()) {
        if (memory_) memory_->costs.observe(rows, acquired, misses, seconds, StepCostModel::StepKind::prompt);
        return;
    }
    SpeculationStats& stats = result_.speculation;
    if (planned_verify_) stats.verify_seconds += seconds;
    else {
        ++stats.plain_steps;
        stats.plain_seconds += seconds;
    }
    if (memory_) memory_->costs.observe(rows, acquired, misses, seconds);
}

std::span<const int32_t> SequenceGeneration::next_tokens(size_t limit) const {
    if (done_) return {};
    if (prompt_done_ < fresh_.size()) return fresh_.subspan(prompt_done_, std::min(limit, fresh_.size() - prompt_done_));
    if (planned_verify_) return block_;
    return std::span<const int32_t>(&last_token_, 1);
}

bool SequenceGeneration::cancel_requested() const {
    return request_->cancel != nullptr && request_->cancel->load(std::memory_order_relaxed);
}

void SequenceGeneration::cancel() {
    if (!done_) finish(StopReason::cancelled);
}

void SequenceGeneration::consumed(size_t n, std::span<const float> logits, int32_t argmax) {
    consumed_rows(n, logits, std::span<const int32_t>(&argmax, 1));
}

void SequenceGeneration::consumed_rows(size_t n, std::span<const float> logits, std::span<const int32_t> argmaxes,
                                       std::span<const float> hidden) {
    if (done_) return;
    const bool output = wants_output(n);
    // The step's rows are at these positions; every row of a prompt chunk is kept.
    const size_t first_position = session_->position() - n;
    const bool prompt_rows = prompt_done_ < fresh_.size();
    if (prompt_rows && !hidden.empty() && source_) source_->observe_hidden(first_position, hidden);
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
    const size_t drafts = planned_verify_ ? block_.size() - 1 : 0;
    planned_verify_ = false;
    const size_t rows = drafts + 1;
    const size_t vocab = logits.size() / rows;
    // Row r's token is chosen as a plain step at that position would choose it; the next row
    // counts only when that token is the draft the block consumed after it.
    size_t r = 0;
    for (;; ++r) {
        choose(vocab > 0 ? logits.subspan(r * vocab, vocab) : std::span<const float>(),
               r < argmaxes.size() ? argmaxes[r] : -1);
        if (error_) return;  // failed: the session is back where the request started
        if (done_ || r == drafts || last_token_ != block_[r + 1]) break;
    }
    const size_t accepted = r < drafts && last_token_ == block_[r + 1] ? r + 1 : r;
    if (!hidden.empty()) {
        const size_t width = hidden.size() / n;
        last_hidden_.assign(hidden.begin() + static_cast<ptrdiff_t>((n - rows + r) * width),
                            hidden.begin() + static_cast<ptrdiff_t>((n - rows + r + 1) * width));
        // A decode step's kept rows: the last token and the accepted drafts.
        if (!prompt_rows && source_) source_->observe_hidden(first_position, hidden.first((r + 1) * width));
    }
    if (drafts == 0) return;
    // The positions plain decoding holds now: the block's first r + 1 tokens. The rows past them
    // are forgotten; they lie within the rings' block rows, so no replay follows.
    session_->rewind(session_->position() - rows + r + 1);
    SpeculationStats& stats = result_.speculation;
    ++stats.verify_steps;
    stats.drafted += drafts;
    stats.accepted += accepted;
    auto& by = stats.by_source[planned_source_];
    by.drafted += drafts;
    by.accepted += accepted;
    if (gate_) gate_->record(planned_source_, drafts, accepted);
}

void SequenceGeneration::choose(std::span<const float> logits, int32_t argmax) {
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
