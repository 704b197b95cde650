#pragma once
// Rotary position embedding as transformers computes it for GPT-OSS: inverse frequencies (plain or
// YaRN), the attention factor that scales cos and sin, the per-position tables and the split-half
// rotation. Header-only pure functions so the unit tests check exactly what the model runs.
//
// Precision follows torch step by step: the inverse frequencies are float32 tensors built from
// float32 operations (each product, quotient and sum rounded to float), the ramp bounds and the
// attention factor are Python doubles (rounded to float only where they meet a float32 tensor),
// and cos/sin are float32 functions of the float32 product position * inv_freq.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <optional>
#include <utility>
#include <vector>

namespace stormo::gpt_oss {

enum class RopeType { standard, yarn };  // transformers' "default" and "yarn"

struct RopeParams {
    RopeType type = RopeType::standard;
    double theta = 0.0;  // rope_theta (the base)
    // YaRN only.
    double factor = 1.0;
    double beta_fast = 32.0;
    double beta_slow = 1.0;
    double original_max_position_embeddings = 0.0;
    bool truncate = true;
    std::optional<double> attention_factor;  // explicit override
    std::optional<double> mscale;
    std::optional<double> mscale_all_dim;
};

// YaRN's inverse dimension formula: the dimension at which a frequency makes `num_rotations` turns
// over `max_position` positions. Evaluated in double in the order transformers writes it.
inline double yarn_correction_dim(double num_rotations, int dim, double base, double max_position) {
    const double two_pi_rotations = num_rotations * 2.0 * std::numbers::pi;
    return (static_cast<double>(dim) * std::log(max_position / two_pi_rotations)) / (2.0 * std::log(base));
}

// The [low, high] dimensions of the ramp; rounded outwards only when `truncate`.
inline std::pair<double, double> yarn_correction_range(double beta_fast, double beta_slow, int dim, double base,
                                                       double max_position, bool truncate) {
    double low = yarn_correction_dim(beta_fast, dim, base, max_position);
    double high = yarn_correction_dim(beta_slow, dim, base, max_position);
    if (truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    return {std::max(low, 0.0), std::min(high, static_cast<double>(dim - 1))};
}

// YaRN's magnitude correction: 0.1 * mscale * ln(scale) + 1 for scale > 1, else 1.
inline double yarn_get_mscale(double scale, double mscale = 1.0) {
    if (scale <= 1.0) return 1.0;
    return 0.1 * mscale * std::log(scale) + 1.0;
}

// The factor transformers multiplies cos and sin by (1 for standard RoPE).
inline double rope_attention_factor(const RopeParams& p) {
    if (p.type != RopeType::yarn) return 1.0;
    if (p.attention_factor) return *p.attention_factor;
    // Python truthiness: both present and non-zero.
    if (p.mscale.value_or(0.0) != 0.0 && p.mscale_all_dim.value_or(0.0) != 0.0)
        return yarn_get_mscale(p.factor, *p.mscale) / yarn_get_mscale(p.factor, *p.mscale_all_dim);
    return yarn_get_mscale(p.factor);
}

// base ** (arange(0, dim, 2).float() / dim) in float32: the exponent is a float32 quotient, the
// power is rounded once to float.
inline std::vector<float> rope_pos_freqs(double base, int dim) {
    const float base_f = static_cast<float>(base);
    std::vector<float> out;
    out.reserve(static_cast<size_t>(dim / 2));
    for (int i = 0; i < dim; i += 2) {
        const float exponent = static_cast<float>(i) / static_cast<float>(dim);
        out.push_back(static_cast<float>(std::pow(static_cast<double>(base_f), static_cast<double>(exponent))));
    }
    return out;
}

// Standard RoPE: 1 / base^(2i/dim).
inline std::vector<float> standard_inv_freq(double base, int dim) {
    std::vector<float> inv = rope_pos_freqs(base, dim);
    for (float& f : inv) f = 1.0f / f;
    return inv;
}

// YaRN: extrapolated (1/pos_freq) and interpolated (1/(factor*pos_freq)) frequencies blended by a
// linear ramp over the dim/2 frequency indices between the correction dimensions.
inline std::vector<float> yarn_inv_freq(const RopeParams& p, int dim) {
    const std::vector<float> pos_freqs = rope_pos_freqs(p.theta, dim);
    auto [low, high] = yarn_correction_range(p.beta_fast, p.beta_slow, dim, p.theta,
                                             p.original_max_position_embeddings, p.truncate);
    if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
    const float low_f = static_cast<float>(low);
    const float width_f = static_cast<float>(high - low);
    const float factor_f = static_cast<float>(p.factor);
    std::vector<float> inv(pos_freqs.size());
    for (size_t i = 0; i < pos_freqs.size(); ++i) {
        const float extrapolation = 1.0f / pos_freqs[i];
        const float interpolation = 1.0f / (factor_f * pos_freqs[i]);
        const float ramp = std::clamp((static_cast<float>(i) - low_f) / width_f, 0.0f, 1.0f);
        const float extrapolation_weight = 1.0f - ramp;
        const float interpolated_part = interpolation * (1.0f - extrapolation_weight);
        const float extrapolated_part = extrapolation * extrapolation_weight;
        inv[i] = interpolated_part + extrapolated_part;
    }
    return inv;
}

inline std::vector<float> rope_inv_freq(const RopeParams& p, int dim) {
    return p.type == RopeType::yarn ? yarn_inv_freq(p, dim) : standard_inv_freq(p.theta, dim);
}

// cos and sin (dim/2 each) of one position, multiplied by the attention factor as float32.
inline void rope_cos_sin(const std::vector<float>& inv_freq, float attention_scaling, int64_t position, float* cos_out,
                         float* sin_out) {
    const float pos = static_cast<float>(position);
    for (size_t i = 0; i < inv_freq.size(); ++i) {
        const float angle = inv_freq[i] * pos;
        cos_out[i] = std::cos(angle) * attention_scaling;
        sin_out[i] = std::sin(angle) * attention_scaling;
    }
}

// Split-half rotation of one head in place: x1 = first half, x2 = second half;
// out = [x1*cos - x2*sin, x2*cos + x1*sin]. cos/sin hold head_dim/2 values.
inline void rope_apply_split_half(float* x, const float* cos, const float* sin, size_t head_dim) {
    const size_t half = head_dim / 2;
    for (size_t i = 0; i < half; ++i) {
        const float x1 = x[i];
        const float x2 = x[i + half];
        const float a = x1 * cos[i];
        const float b = x2 * sin[i];
        const float c = x2 * cos[i];
        const float d = x1 * sin[i];
        x[i] = a - b;
        x[i + half] = c + d;
    }
}

}  // namespace stormo::gpt_oss
