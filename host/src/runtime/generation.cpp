#include "runtime/generation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

#include "runtime/sequence_generation.hpp"

namespace stormo {
namespace {

Expected<std::vector<int32_t>> eos_of(const ModelConfig& config, size_t vocab) {
    if (!config.has("eos_token_id")) return std::vector<int32_t>{};
    STORMO_TRY_ASSIGN(auto ids, config.integers("eos_token_id"));
    for (const int64_t id : ids)
        if (id < 0 || id > INT32_MAX || (vocab > 0 && static_cast<uint64_t>(id) >= vocab))
            return fail(ErrorKind::mismatch, config.source() + ": field \"eos_token_id\" holds " + std::to_string(id) +
                                                 ", outside the vocabulary [0, " +
                                                 (vocab > 0 ? std::to_string(vocab) : std::string("2147483647")) + ")");
    return std::vector<int32_t>(ids.begin(), ids.end());
}

}  // namespace

const char* stop_reason_name(StopReason reason) {
    switch (reason) {
        case StopReason::stop: return "stop";
        case StopReason::max_tokens: return "max_tokens";
        case StopReason::cancelled: return "cancelled";
    }
    return "unknown";
}

Expected<std::vector<int32_t>> stop_ids_of(const ModelSource& source, size_t vocab) {
    // config.json's ids are checked even when generation_config.json's take precedence: a broken
    // field is refused wherever it is, not only where it is used.
    STORMO_TRY_ASSIGN(auto from_config, eos_of(source.config(), vocab));
    if (const auto& gen = source.generation_config(); gen && gen->has("eos_token_id")) return eos_of(*gen, vocab);
    return from_config;
}

size_t reusable_prefix(std::span<const int32_t> held, std::span<const int32_t> prompt) {
    const size_t limit = std::min(held.size(), prompt.empty() ? 0 : prompt.size() - 1);
    size_t n = 0;
    while (n < limit && held[n] == prompt[n]) ++n;
    return n;
}

Expected<GenerationResult> generate(Pipeline& pipeline, Session& session, const GenerationRequest& request,
                                    const std::function<void(int32_t)>& on_token) {
    STORMO_TRY_ASSIGN(SequenceGeneration sequence,
                      SequenceGeneration::begin(session, request, on_token, moe_shape_of(pipeline.model()), pipeline.mtp()));
    ForwardOptions options;
    options.tracer = request.tracer;
    int32_t argmax_token = 0;
    std::vector<int32_t> argmaxes;
    std::vector<float> hidden;
    while (!sequence.done()) {
        // The whole prompt in one call (the pipeline cuts it into blocks), then a token a call, or
        // a verify block of the last token and its drafts.
        sequence.plan_step(session.max_block());
        const std::span<const int32_t> tokens = sequence.next_tokens(std::numeric_limits<size_t>::max());
        ForwardOptions step = options;
        if (sequence.prefilling()) step.on_block = request.on_prefill_block;
        const SequenceStep::Want want = sequence.want(tokens.size());
        if (want == SequenceStep::Want::last_argmax) step.argmax_out = &argmax_token;
        if (want == SequenceStep::Want::all_argmax) step.argmax_rows_out = &argmaxes;
        if (want == SequenceStep::Want::all_logits) step.all_logits = true;
        // A source that reads hidden rows (MTP) needs the prompt's too.
        if (sequence.wants_hidden()) step.final_rows_out = &hidden;
        const ExpertStoreStats before = pipeline.store().stats();
        const auto t0 = std::chrono::steady_clock::now();
        auto logits = pipeline.forward(session, tokens, step);
        if (!logits) {
            sequence.fail(logits.error());
            break;
        }
        const ExpertStoreStats after = pipeline.store().stats();
        sequence.observe_step(tokens.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                              (after.hits + after.misses) - (before.hits + before.misses), after.misses - before.misses);
        if (want == SequenceStep::Want::all_argmax || want == SequenceStep::Want::all_logits)
            sequence.consumed_rows(tokens.size(), *logits, argmaxes, hidden);
        else
            sequence.consumed_rows(tokens.size(), *logits, std::span<const int32_t>(&argmax_token, 1), hidden);
    }
    return sequence.take_result();
}

}  // namespace stormo
