#pragma once
// Rotary position embedding as transformers computes it: the inverse frequencies of each scaling
// kind the families' configs use (default, linear, YaRN with DeepSeek's mscale variants), the
// attention factor that scales cos and sin, the per-position tables and the split-half rotation.
//
// Precision follows torch step by step: the inverse frequencies are float32 tensors built from
// float32 operations (each product, quotient and sum rounded to float), the ramp bounds and the
// attention factor are Python doubles (rounded to float only where they meet a float32 tensor),
// and cos/sin are float32 functions of the float32 product position * inv_freq.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace stormo::toolkit {

enum class RopeType { standard, linear, yarn };  // transformers' "default", "linear", "yarn"

struct RopeParams {
    RopeType type = RopeType::standard;
    double theta = 0.0;   // rope_theta (the base)
    double factor = 1.0;  // linear and yarn
    double partial_rotary_factor = 1.0;  // the share of head_dim that rotates
    // YaRN only.
    double beta_fast = 32.0;
    double beta_slow = 1.0;
    double original_max_position_embeddings = 0.0;
    bool truncate = true;
    std::optional<double> attention_factor;  // explicit override
    std::optional<double> mscale;
    std::optional<double> mscale_all_dim;
};

// YaRN's inverse dimension formula, in double in the order transformers writes it.
double yarn_correction_dim(double num_rotations, int dim, double base, double max_position);
// The [low, high] dimensions of the ramp; rounded outwards only when `truncate`.
std::pair<double, double> yarn_correction_range(double beta_fast, double beta_slow, int dim, double base,
                                                double max_position, bool truncate);
// 0.1 * mscale * ln(scale) + 1 for scale > 1, else 1.
double yarn_get_mscale(double scale, double mscale = 1.0);
// The factor transformers multiplies cos and sin by (1 unless YaRN).
double rope_attention_factor(const RopeParams& p);
// base ** (arange(0, dim, 2).float() / dim) in float32.
std::vector<float> rope_pos_freqs(double base, int dim);
// The inverse frequencies [dim / 2] of a kind, for a rotary dimension `dim`.
std::vector<float> rope_inv_freq(const RopeParams& p, int dim);

// cos and sin (inv_freq.size() each) of one position, multiplied by the attention factor.
void rope_cos_sin(const std::vector<float>& inv_freq, float attention_scaling, int64_t position, float* cos_out,
                  float* sin_out);
// Split-half rotation of `dim` values in place: x1 = first half, x2 = second half;
// out = [x1*cos - x2*sin, x2*cos + x1*sin]; cos/sin hold dim/2 values.
void rope_rotate_split_half(float* x, const float* cos, const float* sin, size_t dim);

// A layer's RoPE ready to apply: the tables of one configuration over a rotary dimension.
class Rope {
public:
    Rope() = default;
    Rope(const RopeParams& params, int rotary_dim);
    int rotary_dim() const { return rotary_dim_; }
    float attention_scaling() const { return attention_scaling_; }
    const std::vector<float>& inv_freq() const { return inv_freq_; }

    // Rotates, for every row r, `heads` vectors at data + r * row_stride + h * head_stride +
    // offset (the rotary part of each head), at position positions[r].
    void apply(std::span<const int64_t> positions, float* data, size_t row_stride, size_t heads, size_t head_stride,
               size_t offset = 0) const;

private:
    int rotary_dim_ = 0;
    float attention_scaling_ = 1.0f;
    std::vector<float> inv_freq_;
};

}  // namespace stormo::toolkit
