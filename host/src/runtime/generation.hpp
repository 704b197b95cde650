#pragma once
// Generation over a session: batched prefill of the prompt, then one-token decode steps, each
// token sampled and emitted, until a stop id or the token limit.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "runtime/forward.hpp"
#include "runtime/sampler.hpp"
#include "runtime/speculation.hpp"
#include "runtime/token_constraint.hpp"
#include "model/model_source.hpp"

namespace stormo {

struct GenerationRequest {
    std::vector<int32_t> prompt;
    size_t max_tokens = 0;
    SamplingParams sampling;
    std::vector<int32_t> stop_ids;
    Tracer* tracer = nullptr;  // intermediates of every step (prefill and decode), for --dump
    // false: the prompt continues the session from its position. true: the prompt is the whole
    // context; the session keeps the KV of the longest prefix it shares with what it holds and
    // computes only the rest (a chat's next turn, a server's next request).
    bool whole_context = false;
    // Set from another thread (a signal handler's flag, a client gone): generation stops after the
    // token in flight, with StopReason::cancelled.
    const std::atomic<bool>* cancel = nullptr;
    // The prompt's progress, block by block (positions done, positions to compute).
    std::function<void(size_t done, size_t total)> on_prefill_block;
    // Structured output: only the tokens it allows are drawn, and generation ends when it is
    // complete. It is the request's own (it keeps the state of the text so far).
    std::shared_ptr<TokenConstraint> constraint;
    // Sees each generated token with the full logits it was chosen from, just before the token is
    // emitted (a server's logprobs). Set, greedy decoding computes every logit instead of finding
    // the argmax alone; the tokens are the same.
    std::function<void(std::span<const float> logits, int32_t token)> on_logits;
    // Speculative decoding (docs/speculation.md): the mode's draft source proposes tokens, a
    // decode step verifies them with the last token in one block, and the tokens are the ones
    // plain decoding gives (greedy and seeded sampling alike). Off by default.
    SpeculationSettings speculation;
    // Replaces the mode's source (tests, bench's replayed drafts); the request's own.
    std::shared_ptr<DraftSource> draft_source;
    // What the run's gates learned, shared by its requests: the gate of SpeculateMode::automatic
    // learns the step costs from them and starts from their acceptance (worth a few tries); null:
    // the request learns its own, from the priors.
    std::shared_ptr<SpeculationMemory> speculation_memory;
};

enum class StopReason { stop, max_tokens, cancelled };
const char* stop_reason_name(StopReason reason);  // "stop", "max_tokens", "cancelled"

struct GenerationResult {
    std::vector<int32_t> tokens;  // generated, a stop id included when generation ended on it
    StopReason reason = StopReason::max_tokens;
    size_t reused_positions = 0;  // prompt positions whose KV the session already held
    double prefill_seconds = 0.0;
    double decode_seconds = 0.0;
    SpeculationStats speculation;
};

// The ids that end generation: generation_config.json's eos_token_id when present, else
// config.json's (an integer or a list in either).
// Each id must lie in [0, vocab) (vocab 0: only negatives are refused); an error names the file
// and the field.
Expected<std::vector<int32_t>> stop_ids_of(const ModelSource& source, size_t vocab = 0);

// The positions of `prompt` a session holding `held` can keep: their longest common prefix, short
// of the whole prompt (the last prompt position is always computed: its logits pick the first token).
size_t reusable_prefix(std::span<const int32_t> held, std::span<const int32_t> prompt);

// Everything is checked before the session changes; on a later error the session is rewound to
// where the request started (for a whole-context request: to the prefix it kept).
Expected<GenerationResult> generate(Pipeline& pipeline, Session& session, const GenerationRequest& request,
                                    const std::function<void(int32_t)>& on_token = {});

}  // namespace stormo
