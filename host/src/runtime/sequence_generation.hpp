#pragma once
// One generation request as the steps a driver runs for it: the prompt's positions (in chunks of
// any size), then one token a step, each sampled from the logits of the step before, until a stop
// id, the token limit or a cancel. `generate` drives one alone; the batch scheduler drives several
// through one forward pass a step. The tokens are the same either way: the same sampler sees the
// same logits bits (a row's bits do not depend on what else is in its block) in the same order.
// With speculation a decode step is a verify block: the last token and the drafts the request's
// source proposed (plan_step), every row's output back, and the longest prefix of drafts that
// plain decoding would have produced kept, each row's token chosen exactly as a plain step would
// choose it (the same sampler draws, penalty history, constraint, stop checks, in order); the
// session then rewinds over the rows not kept, which the rings' block rows cover without a replay.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/forward.hpp"
#include "runtime/generation.hpp"
#include "runtime/sampler.hpp"
#include "runtime/session.hpp"

namespace stormo {

class SequenceGeneration {
public:
    // Checks the request against the session (the context, the sampling) before anything
    // changes; a whole-context request then rewinds the session to the prefix it keeps.
    // `on_token` sees each token as it is chosen.
    // `shape` prices a step's expert reads for the speculation gate when the request brings no
    // speculation_memory of its own (moe_shape_of(model)).
    // `mtp`: the engine's loaded MTP layer (the mtp and auto modes draft from it), or null.
    static Expected<SequenceGeneration> begin(Session& session, const GenerationRequest& request,
                                              std::function<void(int32_t)> on_token = {}, MoeShape shape = {},
                                              const MtpDraft* mtp = nullptr);

    Session& session() const { return *session_; }
    const GenerationRequest& request() const { return *request_; }
    bool done() const { return done_; }
    bool prefilling() const { return !done_ && prompt_done_ < fresh_.size(); }
    // Greedy without a penalty: the step needs only the argmax of the logits.
    bool by_argmax() const { return by_argmax_; }

    // Before a decode step: asks the draft source (and with auto, the gate) for the drafts the
    // step verifies, so that it holds at most `limit` rows. No-op while prefilling or without a
    // source.
    void plan_step(size_t limit);
    // The tokens the next step consumes: up to `limit` of the prompt still to compute, else the
    // last token chosen followed by the planned drafts. Empty when done.
    std::span<const int32_t> next_tokens(size_t limit) const;
    // What a step of `n` next tokens asks the pipeline for.
    SequenceStep::Want want(size_t n) const;
    // Whether every step should hand back its final-normed rows (a draft source reads them).
    bool wants_hidden() const { return source_ != nullptr && source_->wants_hidden(); }
    // The forward pass of the step that consumed the next tokens took `seconds` over `rows` rows
    // (every sequence's in a batched step), acquiring `acquired` experts of which `misses` were
    // read on demand: what the gate's cost model learns from.
    void observe_step(size_t rows, double seconds, uint64_t acquired, uint64_t misses);
    // Whether a step of `n` next tokens needs an output: it ends the prompt, or it is a decode step.
    bool wants_output(size_t n) const {
        return !done_ && request_->max_tokens > 0 && (prompt_done_ >= fresh_.size() || prompt_done_ + n == fresh_.size());
    }
    // The step consumed the first `n` next tokens (the forward pass advanced the session); when it
    // wanted an output, `logits` (sampling) or `argmax` (by_argmax) is its last row's. Chooses and
    // emits the next token and decides whether the sequence is done.
    void consumed(size_t n, std::span<const float> logits, int32_t argmax);
    // The same for a step that wanted every row (a verify block, want() all_*): `logits` holds
    // every row's, or `argmaxes` every row's argmax; `hidden` the step's final-normed rows when
    // wants_hidden() (the source sees those of the positions kept). Keeps the drafts plain
    // decoding would have produced and rewinds the session over the rest.
    void consumed_rows(size_t n, std::span<const float> logits, std::span<const int32_t> argmaxes,
                       std::span<const float> hidden = {});
    // The request's cancel flag is set: the sequence ends now, as cancelled.
    bool cancel_requested() const;
    void cancel();
    // The step failed: the session rewinds to where the request started and the sequence ends
    // with the error.
    void fail(Error error);

    // After done(): the result, or the error it failed with.
    Expected<GenerationResult> take_result();

private:
    SequenceGeneration() = default;
    void finish(StopReason reason);
    // Chooses the token from one row's output as a plain step would and emits it.
    void choose(std::span<const float> logits, int32_t argmax);

    Session* session_ = nullptr;
    const GenerationRequest* request_ = nullptr;
    std::function<void(int32_t)> on_token_;
    std::optional<Sampler> sampler_;
    size_t start_ = 0;                 // the session's position the request rewinds to on failure
    std::span<const int32_t> fresh_;   // the prompt positions to compute
    size_t prompt_done_ = 0;
    std::vector<int32_t> history_;     // prompt and generated ids, for the repetition penalty
    std::vector<float> masked_;        // the logits with a constraint's mask applied
    int32_t last_token_ = 0;
    bool by_argmax_ = false;
    bool done_ = false;
    GenerationResult result_;
    std::optional<Error> error_;
    std::chrono::steady_clock::time_point started_, prompt_finished_;
    // Speculation: the source (null: plain decoding), the gate (auto only), the step's block
    // [last token, drafts...], the final-normed row that chose the last token.
    std::shared_ptr<DraftSource> source_;
    std::shared_ptr<SpeculationMemory> memory_;
    std::optional<SpeculationGate> gate_;
    std::vector<int32_t> block_;
    std::vector<int32_t> sequence_tokens_;  // the session's tokens and the last one, for the source
    std::vector<float> last_hidden_;
    bool planned_verify_ = false;
    std::string planned_source_;
};

// The MoE shape the gate prices expert reads with: MoE layers, experts and top-k of the first.
MoeShape moe_shape_of(const Model& model);

}  // namespace stormo
