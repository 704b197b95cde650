#pragma once
// One generation request as the steps a driver runs for it: the prompt's positions (in chunks of
// any size), then one token a step, each sampled from the logits of the step before, until a stop
// id, the token limit or a cancel. `generate` drives one alone; the batch scheduler drives several
// through one forward pass a step. The tokens are the same either way: the same sampler sees the
// same logits bits (a row's bits do not depend on what else is in its block) in the same order.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "runtime/generation.hpp"
#include "runtime/sampler.hpp"
#include "runtime/session.hpp"

namespace stormo {

class SequenceGeneration {
public:
    // Checks the request against the session (the context, the sampling) before anything
    // changes; a whole-context request then rewinds the session to the prefix it keeps.
    // `on_token` sees each token as it is chosen.
    static Expected<SequenceGeneration> begin(Session& session, const GenerationRequest& request,
                                              std::function<void(int32_t)> on_token = {});

    Session& session() const { return *session_; }
    const GenerationRequest& request() const { return *request_; }
    bool done() const { return done_; }
    bool prefilling() const { return !done_ && prompt_done_ < fresh_.size(); }
    // Greedy without a penalty: the step needs only the argmax of the logits.
    bool by_argmax() const { return by_argmax_; }

    // The tokens the next step consumes: up to `limit` of the prompt still to compute, else the
    // last token chosen. Empty when done.
    std::span<const int32_t> next_tokens(size_t limit) const;
    // Whether a step of `n` next tokens needs an output: it ends the prompt, or it is a decode step.
    bool wants_output(size_t n) const {
        return !done_ && request_->max_tokens > 0 && (prompt_done_ >= fresh_.size() || prompt_done_ + n == fresh_.size());
    }
    // The step consumed the first `n` next tokens (the forward pass advanced the session); when it
    // wanted an output, `logits` (sampling) or `argmax` (by_argmax) is its last row's. Chooses and
    // emits the next token and decides whether the sequence is done.
    void consumed(size_t n, std::span<const float> logits, int32_t argmax);
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
};

}  // namespace stormo
