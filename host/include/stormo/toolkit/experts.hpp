#pragma once
// Routed experts as Qwen3-MoE, GLM and DeepSeek store them: three nn.Linear matrices per expert
// (gate_proj, up_proj, down_proj), one tensor each, in a float format or block-scaled FP8 with a
// weight_scale_inv beside each; the expert computes down(silu(gate x) * up x).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/toolkit/fp8.hpp"

namespace stormo::toolkit {

// The parts of one layer's experts, in the order build_swiglu_expert reads them. `pattern` gives
// a projection's tensor name with "{e}" for the expert id ("model.layers.3.mlp.experts.{e}.up_proj.weight").
// The experts are FP8 (each weight with its scale) when the checkpoint is (`blocks` enabled) and
// holds expert 0's gate scale: an FP8 file may keep some layers in a float format. Otherwise a
// part is one of `dtypes` or a GGUF block type (gguf_block_dtypes, loading.hpp).
std::vector<ExpertPartDecl> swiglu_expert_parts(const LoadContext& ctx,
                                                const std::function<std::string(const char* projection)>& pattern,
                                                int64_t hidden, int64_t inter, const std::vector<DType>& dtypes,
                                                const Fp8Blocks& blocks);

// A pattern's tensor name for one expert ("{e}" replaced by its id).
std::string expert_tensor_name(const std::string& pattern, int expert);

// One expert over the rows that chose it; `who` and `layer` name it in errors.
Expected<void> build_swiglu_expert(const Compute& c, const ExpertView& expert, size_t hidden, size_t inter,
                                   const Fp8Blocks& blocks, const std::string& who, const Rows& in, Rows out);

}  // namespace stormo::toolkit
