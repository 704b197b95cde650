#pragma once
// The log-probabilities a server reports with a token (OpenAI's logprobs): the log-softmax of the
// raw logits the token was chosen from, over the whole vocabulary, before the sampler's
// temperature, top-k, top-p, min-p and penalty, computed in double.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace stormo {

struct TokenLogprob {
    int32_t id = 0;
    double logprob = 0.0;
};

struct TokenLogprobs {
    TokenLogprob chosen;
    std::vector<TokenLogprob> top;  // the most likely ids, most likely first (the lower id among equals)
};

// `chosen` must index `logits`; `top_n` ids at most are listed (fewer when the vocabulary is smaller).
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, size_t top_n);

}  // namespace stormo
