#pragma once
// Pure pieces of the GPT-OSS MoE block: the router's top-k in torch.topk's order and the clipped
// SwiGLU of the experts. Header-only so the unit tests check what the model runs.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace stormo::gpt_oss {

// The constant transformers uses in the gate's sigmoid (GptOssExperts.alpha).
inline constexpr float kSwigluAlpha = 1.702f;

// True when a should come before b in torch.topk's descending order: larger first, NaN above every
// number, equal values by ascending index (what torch's CPU topk returns for these sizes).
inline bool topk_before(const float* v, int32_t a, int32_t b) {
    const bool a_nan = std::isnan(v[a]);
    const bool b_nan = std::isnan(v[b]);
    if (a_nan != b_nan) return a_nan;
    if (!a_nan && v[a] != v[b]) return v[a] > v[b];
    return a < b;
}

// Indices of the k largest of v[0..n), in descending order (ties: lower index first).
inline std::vector<int32_t> topk_indices(const float* v, size_t n, size_t k) {
    std::vector<int32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    k = std::min(k, n);
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                      [v](int32_t a, int32_t b) { return topk_before(v, a, b); });
    idx.resize(k);
    return idx;
}

// torch.sigmoid in float32: 1 / (1 + exp(-x)).
inline float sigmoid_f32(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// GPT-OSS's clipped SwiGLU over one row. gate_up holds 2*inter interleaved values (gate = even
// columns, up = odd); out gets inter values:
//   gate = min(gate, limit); up = clamp(up, -limit, limit)
//   out = (up + 1) * (gate * sigmoid(gate * alpha))
// in the order transformers evaluates it (NaN propagates as through torch.clamp).
inline void clipped_swiglu(const float* gate_up, size_t inter, float limit, float* out) {
    for (size_t i = 0; i < inter; ++i) {
        float gate = gate_up[2 * i];
        float up = gate_up[2 * i + 1];
        if (gate > limit) gate = limit;
        if (up > limit) up = limit;
        if (up < -limit) up = -limit;
        const float glu = gate * sigmoid_f32(gate * kSwigluAlpha);
        out[i] = (up + 1.0f) * glu;
    }
}

}  // namespace stormo::gpt_oss
