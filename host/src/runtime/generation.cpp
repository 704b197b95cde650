#include "runtime/generation.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace stormo {
namespace {

using Clock = std::chrono::steady_clock;

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
    if (request.prompt.empty()) return fail(ErrorKind::invalid_argument, "the prompt is empty");
    STORMO_TRY(validate(request.sampling));
    const size_t start = request.whole_context ? reusable_prefix(session.tokens(), request.prompt) : session.position();
    const std::span<const int32_t> fresh = std::span<const int32_t>(request.prompt).subspan(request.whole_context ? start : 0);
    // Checked before anything runs: a request never silently stops short of max_tokens.
    const size_t needed = fresh.size() + request.max_tokens;
    if (needed > session.capacity() - start)
        return fail(ErrorKind::resource, "prompt of " + std::to_string(request.whole_context ? request.prompt.size() : fresh.size()) +
                                             " tokens + " + std::to_string(request.max_tokens) +
                                             " new tokens exceed the context of " + std::to_string(session.capacity()) +
                                             (request.whole_context ? std::string()
                                                                    : " (" + std::to_string(start) + " already used)"));
    GenerationResult result;
    if (request.whole_context) {
        session.rewind(start);
        result.reused_positions = start;
    }
    std::vector<int32_t> history(request.prompt);
    Sampler sampler(request.sampling);
    ForwardOptions options;
    options.tracer = request.tracer;
    // Greedy without a repetition penalty needs only the logits' argmax, which the pipeline
    // finds without computing every logit when it reads the head by bound; sampling, the penalty
    // and --dump keep the full logits (docs/head_bound.md).
    const bool by_argmax = takes_argmax(request.sampling) && request.tracer == nullptr;
    int32_t argmax_token = 0;
    if (by_argmax) options.argmax_out = &argmax_token;
    auto next_token = [&](const Expected<std::vector<float>>& logits) {
        return by_argmax ? argmax_token : sampler.sample(*logits, history);
    };

    auto t0 = Clock::now();
    ForwardOptions prefill = options;
    prefill.on_block = request.on_prefill_block;
    auto logits = pipeline.forward(session, fresh, prefill);
    result.prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!logits) return tl::unexpected(logits.error());
    t0 = Clock::now();
    while (result.tokens.size() < request.max_tokens) {
        const int32_t token = next_token(logits);
        result.tokens.push_back(token);
        history.push_back(token);
        if (on_token) on_token(token);
        if (std::find(request.stop_ids.begin(), request.stop_ids.end(), token) != request.stop_ids.end()) {
            result.reason = StopReason::stop;
            break;
        }
        if (request.cancel && request.cancel->load(std::memory_order_relaxed)) {
            result.reason = StopReason::cancelled;
            break;
        }
        if (result.tokens.size() == request.max_tokens) break;
        const int32_t feed[1] = {token};
        logits = pipeline.forward(session, feed, options);
        if (!logits) {
            session.rewind(start);
            return tl::unexpected(logits.error());
        }
    }
    result.decode_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return result;
}

}  // namespace stormo
