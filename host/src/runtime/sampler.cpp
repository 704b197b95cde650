#include "runtime/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_set>

#include "util/format_number.hpp"

namespace stormo {

Expected<void> validate(const SamplingParams& p) {
    const auto refuse = [](const char* option, const char* expected, auto value) {
        return fail(ErrorKind::invalid_argument, std::string(option) + " must be " + expected + ", not " + format_number(value));
    };
    if (!(p.temperature >= 0.0f) || !std::isfinite(p.temperature)) return refuse("--temperature", "a number of 0 or more", p.temperature);
    if (p.top_k < 0) return refuse("--top-k", "0 or more", static_cast<double>(p.top_k));
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return refuse("--top-p", "above 0 and at most 1", p.top_p);
    if (!(p.min_p >= 0.0f && p.min_p < 1.0f)) return refuse("--min-p", "at least 0 and below 1", p.min_p);
    if (!(p.repetition_penalty > 0.0f) || !std::isfinite(p.repetition_penalty))
        return refuse("--repeat-penalty", "a number above 0", p.repetition_penalty);
    if (p.repetition_window < 0) return refuse("--repeat-last-n", "0 or more", static_cast<double>(p.repetition_window));
    return {};
}

int32_t argmax(std::span<const float> values) {
    size_t best = 0;
    for (size_t i = 1; i < values.size(); ++i)
        if (values[i] > values[best]) best = i;
    return static_cast<int32_t>(best);
}

bool takes_argmax(const SamplingParams& p) {
    return p.temperature == 0.0f && (p.repetition_penalty == 1.0f || p.repetition_window <= 0);
}

int32_t Sampler::sample(std::span<const float> logits_in, std::span<const int32_t> history) {
    std::vector<float> logits(logits_in.begin(), logits_in.end());
    if (params_.repetition_penalty != 1.0f && params_.repetition_window > 0) {
        const size_t window = std::min(history.size(), static_cast<size_t>(params_.repetition_window));
        std::unordered_set<int32_t> seen(history.end() - static_cast<std::ptrdiff_t>(window), history.end());
        for (int32_t t : seen) {
            if (t < 0 || static_cast<size_t>(t) >= logits.size()) continue;
            float& v = logits[static_cast<size_t>(t)];
            v = v > 0.0f ? v / params_.repetition_penalty : v * params_.repetition_penalty;
        }
    }
    if (params_.temperature == 0.0f) return argmax(logits);

    // Candidates sorted by logit, descending; ties by lower id, so the draw is reproducible.
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
        return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
    });
    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < ids.size()) ids.resize(static_cast<size_t>(params_.top_k));

    std::vector<double> probs(ids.size());
    const double top = logits[static_cast<size_t>(ids[0])];
    double sum = 0.0;
    for (size_t i = 0; i < ids.size(); ++i) {
        probs[i] = std::exp((logits[static_cast<size_t>(ids[i])] - top) / params_.temperature);
        sum += probs[i];
    }
    for (double& p : probs) p /= sum;

    size_t keep = probs.size();
    if (params_.top_p < 1.0f) {
        double cumulative = 0.0;
        for (size_t i = 0; i < probs.size(); ++i) {
            cumulative += probs[i];
            if (cumulative >= params_.top_p) {
                keep = i + 1;
                break;
            }
        }
    }
    if (params_.min_p > 0.0f) {
        const double floor = probs[0] * params_.min_p;
        size_t i = 1;
        while (i < keep && probs[i] >= floor) ++i;
        keep = i;
    }
    std::discrete_distribution<size_t> pick(probs.begin(), probs.begin() + static_cast<std::ptrdiff_t>(keep));
    return ids[pick(rng_)];
}

}  // namespace stormo
