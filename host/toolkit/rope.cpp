// RoPE tables and rotation (see stormo/toolkit/rope.hpp for the precision rules).
#include "stormo/toolkit/rope.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace stormo::toolkit {

double yarn_correction_dim(double num_rotations, int dim, double base, double max_position) {
    const double two_pi_rotations = num_rotations * 2.0 * std::numbers::pi;
    return (static_cast<double>(dim) * std::log(max_position / two_pi_rotations)) / (2.0 * std::log(base));
}

std::pair<double, double> yarn_correction_range(double beta_fast, double beta_slow, int dim, double base,
                                                double max_position, bool truncate) {
    double low = yarn_correction_dim(beta_fast, dim, base, max_position);
    double high = yarn_correction_dim(beta_slow, dim, base, max_position);
    if (truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    return {std::max(low, 0.0), std::min(high, static_cast<double>(dim - 1))};
}

double yarn_get_mscale(double scale, double mscale) {
    if (scale <= 1.0) return 1.0;
    return 0.1 * mscale * std::log(scale) + 1.0;
}

double rope_attention_factor(const RopeParams& p) {
    if (p.type != RopeType::yarn) return 1.0;
    if (p.attention_factor) return *p.attention_factor;
    // Python truthiness: both present and non-zero (DeepSeek-style configs).
    if (p.mscale.value_or(0.0) != 0.0 && p.mscale_all_dim.value_or(0.0) != 0.0)
        return yarn_get_mscale(p.factor, *p.mscale) / yarn_get_mscale(p.factor, *p.mscale_all_dim);
    return yarn_get_mscale(p.factor);
}

std::vector<float> rope_pos_freqs(double base, int dim) {
    // The exponent is a float32 quotient; the power is rounded once to float.
    const float base_f = static_cast<float>(base);
    std::vector<float> out;
    out.reserve(static_cast<size_t>(dim / 2));
    for (int i = 0; i < dim; i += 2) {
        const float exponent = static_cast<float>(i) / static_cast<float>(dim);
        out.push_back(static_cast<float>(std::pow(static_cast<double>(base_f), static_cast<double>(exponent))));
    }
    return out;
}

namespace {

std::vector<float> standard_inv_freq(double base, int dim) {
    std::vector<float> inv = rope_pos_freqs(base, dim);
    for (float& f : inv) f = 1.0f / f;
    return inv;
}

// transformers' linear scaling: the default frequencies divided by the factor (a float32 tensor
// divided by a Python float).
std::vector<float> linear_inv_freq(const RopeParams& p, int dim) {
    std::vector<float> inv = standard_inv_freq(p.theta, dim);
    const float factor = static_cast<float>(p.factor);
    for (float& f : inv) f = f / factor;
    return inv;
}

// YaRN: extrapolated (1/pos_freq) and interpolated (1/(factor*pos_freq)) frequencies blended by a
// linear ramp over the dim/2 frequency indices between the correction dimensions.
std::vector<float> yarn_inv_freq(const RopeParams& p, int dim) {
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

}  // namespace

std::vector<float> rope_inv_freq(const RopeParams& p, int dim) {
    switch (p.type) {
        case RopeType::linear: return linear_inv_freq(p, dim);
        case RopeType::yarn: return yarn_inv_freq(p, dim);
        case RopeType::standard: break;
    }
    return standard_inv_freq(p.theta, dim);
}

void rope_cos_sin(const std::vector<float>& inv_freq, float attention_scaling, int64_t position, float* cos_out,
                  float* sin_out) {
    const float pos = static_cast<float>(position);
    for (size_t i = 0; i < inv_freq.size(); ++i) {
        const float angle = inv_freq[i] * pos;
        cos_out[i] = std::cos(angle) * attention_scaling;
        sin_out[i] = std::sin(angle) * attention_scaling;
    }
}

void rope_rotate_split_half(float* x, const float* cos, const float* sin, size_t dim) {
    const size_t half = dim / 2;
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

Rope::Rope(const RopeParams& params, int rotary_dim)
    : rotary_dim_(rotary_dim),
      attention_scaling_(static_cast<float>(rope_attention_factor(params))),
      inv_freq_(rope_inv_freq(params, rotary_dim)) {}

void Rope::apply(std::span<const int64_t> positions, float* data, size_t row_stride, size_t heads, size_t head_stride,
                 size_t offset) const {
    const size_t dim = static_cast<size_t>(rotary_dim_);
    std::vector<float> cos(dim / 2), sin(dim / 2);
    for (size_t r = 0; r < positions.size(); ++r) {
        rope_cos_sin(inv_freq_, attention_scaling_, positions[r], cos.data(), sin.data());
        for (size_t h = 0; h < heads; ++h)
            rope_rotate_split_half(data + r * row_stride + h * head_stride + offset, cos.data(), sin.data(), dim);
    }
}

}  // namespace stormo::toolkit
