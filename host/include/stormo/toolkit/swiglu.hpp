#pragma once
// The gated activations of the families' FFNs, in the order transformers evaluates them.
#include <cmath>
#include <cstddef>

#include "stormo/kernels.hpp"

namespace stormo::toolkit {

// torch.sigmoid in float32: 1 / (1 + exp(-x)).
inline float sigmoid_f32(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// Plain SwiGLU (Qwen3, GLM, DeepSeek) in place: gate[i] = silu(gate[i]) * up[i], with the kernel
// table's silu (torch's x / (1 + exp(-x))), then one float product, as torch's act(gate) * up.
inline void swiglu(float* gate, const float* up, size_t n, SiluFn silu) {
    silu(gate, n);
    for (size_t i = 0; i < n; ++i) gate[i] = gate[i] * up[i];
}

// GPT-OSS's clamped SwiGLU of one gate and one up value:
//   gate = min(gate, limit); up = clamp(up, -limit, limit)
//   out = (up + 1) * (gate * sigmoid(gate * alpha))
// (NaN propagates as through torch.clamp).
inline float clamped_swiglu(float gate, float up, float limit, float alpha) {
    if (gate > limit) gate = limit;
    if (up > limit) up = limit;
    if (up < -limit) up = -limit;
    const float glu = gate * sigmoid_f32(gate * alpha);
    return (up + 1.0f) * glu;
}

// Over one row of 2*inter interleaved values (gate = even columns, up = odd, transformers'
// layout); out gets inter values.
inline void clamped_swiglu_interleaved(const float* gate_up, size_t inter, float limit, float alpha, float* out) {
    for (size_t i = 0; i < inter; ++i) out[i] = clamped_swiglu(gate_up[2 * i], gate_up[2 * i + 1], limit, alpha);
}

// Over separate gate and up rows of inter values (llama.cpp's layout).
inline void clamped_swiglu_split(const float* gate, const float* up, size_t inter, float limit, float alpha, float* out) {
    for (size_t i = 0; i < inter; ++i) out[i] = clamped_swiglu(gate[i], up[i], limit, alpha);
}

}  // namespace stormo::toolkit
