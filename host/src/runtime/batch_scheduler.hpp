#pragma once
// Continuous batching: each step runs every running sequence through one forward pass, a decode
// row for each sequence past its prompt and chunks of the prompts still to compute (chunked
// prefill: a long prompt holds the others up for one chunk at most, and prompts take their chunks
// in turn), so the dense weights are read once a step for all of them and each chosen expert once
// for every row that chose it. Sequences join and leave between steps. Each sequence's tokens are
// the bits it gets alone (Pipeline::forward_batch); a step that fails is run again one sequence at
// a time, so only the sequence at fault fails, as it would alone.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/forward.hpp"
#include "runtime/sequence_generation.hpp"

namespace stormo {

struct BatchSettings {
    // Rows a step holds at most: a decode row per sequence past its prompt, the rest prompt chunks
    // (never fewer than a quarter of it, so prompts progress however many sequences decode).
    size_t step_rows = 128;
    // A prompt chunk that would cross a multiple of this ends there (0: anywhere), so a sequence's
    // position lands on each multiple at the end of a step: where the prompt cache captures the
    // block that ends there (runtime/prompt_cache.hpp). The bits do not change: a row's bits do
    // not depend on the chunk it is computed in.
    size_t chunk_boundary = 0;
    // A sequence whose step reaches or crosses a multiple of this gets the experts its last rows
    // chose (BatchStep::routes; 0: never), which the prompt cache keeps with the blocks that end
    // in the step: hints of what a restore should prefetch.
    size_t route_boundary = 0;
};

struct BatchStep {
    size_t sequences = 0;     // sequences that ran in the step
    size_t decode_rows = 0;
    size_t prompt_rows = 0;
    bool isolated = false;    // the batched step failed and its sequences ran one by one
    // With route_boundary: per sequence whose step reached or crossed one, the experts its last
    // rows chose, per layer (Session::routed_experts).
    struct Routed {
        const SequenceGeneration* sequence = nullptr;
        std::vector<std::vector<int32_t>> experts;
    };
    std::vector<Routed> routes = {};
};

class BatchScheduler {
public:
    explicit BatchScheduler(Pipeline& pipeline, BatchSettings settings = {});

    // One step over the sequences given (distinct sessions; those done are skipped, those whose
    // cancel flag is set end as cancelled first). Sequences that end in the step are done()
    // afterwards; a failed one holds its error (SequenceGeneration::take_result).
    BatchStep step(std::span<SequenceGeneration* const> running);

    const BatchSettings& settings() const { return settings_; }

private:
    Pipeline& pipeline_;
    BatchSettings settings_;
    size_t turn_ = 0;  // where the round of prompt chunks starts
};

}  // namespace stormo
