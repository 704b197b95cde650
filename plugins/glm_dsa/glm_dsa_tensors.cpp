// GLM-MoE-DSA tensor roles by checkpoint name. Shared experts are resident dense FFNs; the
// router's weight and its e_score_correction_bias are the router; the DSA indexer is attention.
#include <string_view>

#include "glm_dsa_family.hpp"

namespace stormo::glm_dsa {
namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The module a parameter belongs to ends in "norm": input_layernorm, post_attention_layernorm,
// q_a_layernorm, kv_a_layernorm, indexer.k_norm (weight and bias), model.norm.
bool is_norm(std::string_view name) {
    const size_t last = name.rfind('.');
    if (last == std::string_view::npos) return false;
    const std::string_view module = name.substr(0, last);
    const size_t prev = module.rfind('.');
    const std::string_view leaf = prev == std::string_view::npos ? module : module.substr(prev + 1);
    return leaf.ends_with("norm");
}

}  // namespace

TensorRole GlmDsaFamily::classify(std::string_view n) const {
    if (n.starts_with("model.embed_tokens.")) return TensorRole::embedding;
    if (n.starts_with("lm_head.")) return TensorRole::head;
    if (n.starts_with("model.norm.")) return TensorRole::norm;
    if (!n.starts_with("model.layers.")) return TensorRole::other;
    if (contains(n, ".mlp.experts.")) return TensorRole::experts;
    if (contains(n, ".mlp.gate.")) return TensorRole::router;
    // Dense layers' MLP and every MoE layer's shared experts.
    if (contains(n, ".mlp.")) return TensorRole::dense_ffn;
    if (is_norm(n)) return TensorRole::norm;
    if (contains(n, ".self_attn.")) return TensorRole::attention;
    // e.g. the multi-token-prediction layer's eh_proj, which the forward pass does not use.
    return TensorRole::other;
}

}  // namespace stormo::glm_dsa
