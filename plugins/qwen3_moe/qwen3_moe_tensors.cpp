// Qwen3-MoE tensor roles by checkpoint name (model.layers.N.mlp.experts.E.gate_proj.weight, ...).
#include <string_view>

#include "qwen3_moe_family.hpp"

namespace stormo::qwen3_moe {
namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The module a parameter belongs to ends in "norm": input_layernorm, post_attention_layernorm,
// q_norm, k_norm, model.norm.
bool is_norm(std::string_view name) {
    const size_t last = name.rfind('.');
    if (last == std::string_view::npos) return false;
    const std::string_view module = name.substr(0, last);
    const size_t prev = module.rfind('.');
    const std::string_view leaf = prev == std::string_view::npos ? module : module.substr(prev + 1);
    return leaf.ends_with("norm");
}

}  // namespace

TensorRole Qwen3MoeFamily::classify(std::string_view n) const {
    if (n.starts_with("model.embed_tokens.")) return TensorRole::embedding;
    if (n.starts_with("lm_head.")) return TensorRole::head;
    if (n.starts_with("model.norm.")) return TensorRole::norm;
    if (!n.starts_with("model.layers.")) return TensorRole::other;
    // Routed experts, per expert (hub) or fused over the expert axis (transformers 5).
    if (contains(n, ".mlp.experts.")) return TensorRole::experts;
    if (contains(n, ".mlp.gate.") || contains(n, ".mlp.shared_expert_gate.")) return TensorRole::router;
    // The dense MLP of mlp_only_layers (and a shared expert, should a checkpoint have one).
    if (contains(n, ".mlp.")) return TensorRole::dense_ffn;
    if (is_norm(n)) return TensorRole::norm;
    if (contains(n, ".self_attn.")) return TensorRole::attention;
    return TensorRole::other;
}

}  // namespace stormo::qwen3_moe
