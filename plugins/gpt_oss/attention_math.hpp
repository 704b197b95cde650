#pragma once
// Pure pieces of GPT-OSS attention: which keys a query sees (causal, optionally a sliding window)
// and the softmax with a learned sink. Header-only so the unit tests check what the model runs.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "stormo/kernels.hpp"

namespace stormo::gpt_oss {

// First key position a query at `position` sees. transformers' sliding overlay keeps key j for
// query i iff j > i - window (i.e. i - j < window), on top of the causal j <= i; window 0 = full.
inline int64_t first_visible_key(int64_t position, int64_t sliding_window) {
    if (sliding_window <= 0) return 0;
    return std::max<int64_t>(0, position - sliding_window + 1);
}

// The sink joins the softmax as one more logit: logits[0..n) are the scaled scores, logits[n] is
// set to the sink; after the softmax over n + 1 (max subtracted first, sink included) the first n
// entries are the key probabilities and the returned value is the mass the sink took (it carries no
// value vector). `logits` must hold n + 1 floats.
inline float softmax_with_sink(float* logits, size_t n, float sink, SoftmaxFn softmax) {
    logits[n] = sink;
    softmax(logits, n + 1);
    return logits[n];
}

}  // namespace stormo::gpt_oss
