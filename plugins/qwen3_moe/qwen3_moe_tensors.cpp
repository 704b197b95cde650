// Qwen3-MoE tensor roles by checkpoint name (model.layers.N.mlp.experts.E.gate_proj.weight, ...):
// the dense MLP of mlp_only_layers (and a shared expert, should a checkpoint have one) is a dense FFN.
#include "qwen3_moe_family.hpp"
#include "stormo/toolkit/tensor_roles.hpp"

namespace stormo::qwen3_moe {

TensorRole Qwen3MoeFamily::classify(std::string_view n) const {
    return toolkit::classify_decoder_tensor(n, {".mlp.gate.", ".mlp.shared_expert_gate."});
}

}  // namespace stormo::qwen3_moe
