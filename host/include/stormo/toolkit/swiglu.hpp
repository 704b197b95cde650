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

// GPT-OSS's clamped SwiGLU over one row of 2*inter interleaved values (gate = even columns, up =
// odd); out gets inter values:
//   gate = min(gate, limit); up = clamp(up, -limit, limit)
//   out = (up + 1) * (gate * sigmoid(gate * alpha))
// (NaN propagates as through torch.clamp).
inline void clamped_swiglu_interleaved(const float* gate_up, size_t inter, float limit, float alpha, float* out) {
    for (size_t i = 0; i < inter; ++i) {
        float gate = gate_up[2 * i];
        float up = gate_up[2 * i + 1];
        if (gate > limit) gate = limit;
        if (up > limit) up = limit;
        if (up < -limit) up = -limit;
        const float glu = gate * sigmoid_f32(gate * alpha);
        out[i] = (up + 1.0f) * glu;
    }
}

}  // namespace stormo::toolkit
