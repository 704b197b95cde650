#include "runtime/token_logprobs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace stormo {
namespace {

// The row's largest value and log(sum(exp(x - largest))): the log-softmax is (x - largest) - that,
// with no exp overflowing and no precision lost to a large largest.
struct Normalizer {
    double largest = 0.0;
    double log_sum = 0.0;
};

Normalizer normalizer_of(std::span<const float> logits) {
    Normalizer n;
    n.largest = -std::numeric_limits<double>::infinity();
    for (const float x : logits) n.largest = std::max(n.largest, static_cast<double>(x));
    double sum = 0.0;
    for (const float x : logits) sum += std::exp(static_cast<double>(x) - n.largest);
    n.log_sum = std::log(sum);
    return n;
}

}  // namespace

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t chosen, size_t top_n) {
    const Normalizer norm = normalizer_of(logits);
    auto logprob = [&](int32_t id) {
        return (static_cast<double>(logits[static_cast<size_t>(id)]) - norm.largest) - norm.log_sum;
    };
    TokenLogprobs out;
    out.chosen = {chosen, logprob(chosen)};
    const size_t n = std::min(top_n, logits.size());
    if (n == 0) return out;
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    // A NaN ranks last, so the order stays strict and weak whatever the row holds.
    auto rank = [&](int32_t id) {
        const float x = logits[static_cast<size_t>(id)];
        return std::isnan(x) ? -std::numeric_limits<float>::infinity() : x;
    };
    auto more_likely = [&](int32_t a, int32_t b) {
        const float la = rank(a);
        const float lb = rank(b);
        return la > lb || (la == lb && a < b);
    };
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), more_likely);
    out.top.reserve(n);
    for (size_t i = 0; i < n; ++i) out.top.push_back({ids[i], logprob(ids[i])});
    return out;
}

}  // namespace stormo
