#pragma once
// Generation over a session: batched prefill of the prompt, then one-token decode steps, each
// token sampled and emitted, until a stop id or the token limit.
#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/forward.hpp"
#include "runtime/sampler.hpp"
#include "model/model_source.hpp"

namespace stormo {

struct GenerationRequest {
    std::vector<int32_t> prompt;
    size_t max_tokens = 0;
    SamplingParams sampling;
    std::vector<int32_t> stop_ids;
    Tracer* tracer = nullptr;  // intermediates of every step (prefill and decode), for --dump
};

enum class StopReason { stop, max_tokens };

struct GenerationResult {
    std::vector<int32_t> tokens;  // generated, a stop id included when generation ended on it
    StopReason reason = StopReason::max_tokens;
    double prefill_seconds = 0.0;
    double decode_seconds = 0.0;
};

// The ids that end generation: generation_config.json's eos_token_id when present, else
// config.json's (an integer or a list in either).
Expected<std::vector<int32_t>> stop_ids_of(const ModelSource& source);

// On error the session is rewound to where the request started.
Expected<GenerationResult> generate(Pipeline& pipeline, Session& session, const GenerationRequest& request,
                                    const std::function<void(int32_t)>& on_token = {});

}  // namespace stormo
