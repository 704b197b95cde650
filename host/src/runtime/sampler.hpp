#pragma once
// Picks the next token from a row of logits: repetition penalty, then greedy (temperature 0) or
// top-k -> temperature -> softmax -> top-p -> min-p -> a seeded draw.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "stormo/error.hpp"

namespace stormo {

struct SamplingParams {
    float temperature = 0.0f;       // 0: greedy
    int top_k = 0;                  // 0: off
    float top_p = 1.0f;             // 1: off
    float min_p = 0.0f;             // 0: off
    float repetition_penalty = 1.0f;  // 1: off
    int repetition_window = 64;     // how many recent tokens the penalty looks at
    uint64_t seed = 0;
};

Expected<void> validate(const SamplingParams& p);

class Sampler {
public:
    explicit Sampler(SamplingParams params) : params_(params), rng_(params.seed) {}
    // `history` holds the tokens seen so far (prompt and generated), for the repetition penalty.
    int32_t sample(std::span<const float> logits, std::span<const int32_t> history);

private:
    SamplingParams params_;
    std::mt19937_64 rng_;
};

// The index of the largest value, the lowest index among equals.
int32_t argmax(std::span<const float> values);

// Whether Sampler::sample with these parameters is argmax(logits) whatever the history: greedy
// (temperature 0) and no repetition penalty in effect.
bool takes_argmax(const SamplingParams& p);

}  // namespace stormo
