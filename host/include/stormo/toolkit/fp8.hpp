#pragma once
// Block-scaled FP8 checkpoints as the hub ships them (Qwen3-*-FP8, DeepSeek-V3, GLM): a linear
// layer's `<name>.weight` in F8_E4M3 and `<name>.weight_scale_inv` holding one float (F32 or BF16)
// per block of quantization_config.weight_block_size; W = e4m3 value * the block's scale. The
// weights stay FP8 in RAM and in the expert store (at their stored size); the kernels dequantize
// as they read (WeightFormat::FP8_E4M3).
#include <cstdint>
#include <string>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/json.hpp"
#include "stormo/kernels.hpp"

namespace stormo::toolkit {

struct Fp8Blocks {
    int64_t rows = 0;  // 0: the checkpoint is not FP8
    int64_t cols = 0;
    bool enabled() const { return rows > 0 && cols > 0; }
};

// quantization_config with quant_method "fp8" (fmt e4m3, weight_block_size [rows, cols]); no
// quantization_config: not FP8. Another quant_method is refused, naming it and `family`.
Expected<Fp8Blocks> read_fp8_quantization(const ModelConfig& config, const std::string& family);

// "x.weight" -> "x.weight_scale_inv".
std::string fp8_scale_name(const std::string& weight_name);
// The scale grid of a rows x cols matrix: [ceil(rows / block rows), ceil(cols / block cols)].
Shape fp8_scale_grid(int64_t rows, int64_t cols, const Fp8Blocks& blocks);
// The dtypes a weight_scale_inv may have.
const std::vector<DType>& fp8_scale_dtypes();

// A view of an FP8 matrix [rows, cols] (nn.Linear layout) over its bytes and float scales.
WeightView fp8_view(const void* data, const float* scales, size_t rows, size_t cols, const Fp8Blocks& blocks);

// An expert's matrix from its parts: `weight` in a float format (F32, BF16, F16), or FP8 with
// `scale` its weight_scale_inv part (widened to float into `scales`, which must outlive the view).
Expected<WeightView> expert_matrix(const ExpertPart& weight, const ExpertPart* scale, size_t rows, size_t cols,
                                   const Fp8Blocks& blocks, std::vector<float>& scales);

}  // namespace stormo::toolkit
