#include "runtime/generation.hpp"

#include <algorithm>
#include <chrono>

namespace stormo {
namespace {

using Clock = std::chrono::steady_clock;

Expected<std::vector<int32_t>> eos_of(const ModelConfig& config) {
    if (!config.has("eos_token_id")) return std::vector<int32_t>{};
    STORMO_TRY_ASSIGN(auto ids, config.integers("eos_token_id"));
    return std::vector<int32_t>(ids.begin(), ids.end());
}

}  // namespace

Expected<std::vector<int32_t>> stop_ids_of(const ModelSource& source) {
    if (const auto& gen = source.generation_config(); gen && gen->has("eos_token_id")) return eos_of(*gen);
    return eos_of(source.config());
}

Expected<GenerationResult> generate(Pipeline& pipeline, Session& session, const GenerationRequest& request,
                                    const std::function<void(int32_t)>& on_token) {
    if (request.prompt.empty()) return fail(ErrorKind::invalid_argument, "the prompt is empty");
    STORMO_TRY(validate(request.sampling));
    const size_t start = session.position();
    // Checked before anything runs: a request never silently stops short of max_tokens.
    const size_t needed = request.prompt.size() + request.max_tokens;
    if (needed > session.remaining())
        return fail(ErrorKind::resource, "prompt of " + std::to_string(request.prompt.size()) + " tokens + " +
                                             std::to_string(request.max_tokens) + " new tokens exceed the context of " +
                                             std::to_string(session.capacity()) + " (" +
                                             std::to_string(session.position()) + " already used)");
    GenerationResult result;
    std::vector<int32_t> history(request.prompt);
    Sampler sampler(request.sampling);
    ForwardOptions options;
    options.tracer = request.tracer;

    auto t0 = Clock::now();
    auto logits = pipeline.forward(session, request.prompt, options);
    result.prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!logits) return tl::unexpected(logits.error());
    t0 = Clock::now();
    while (result.tokens.size() < request.max_tokens) {
        const int32_t token = sampler.sample(*logits, history);
        result.tokens.push_back(token);
        history.push_back(token);
        if (on_token) on_token(token);
        if (std::find(request.stop_ids.begin(), request.stop_ids.end(), token) != request.stop_ids.end()) {
            result.reason = StopReason::stop;
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
