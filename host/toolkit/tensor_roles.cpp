// Tensor roles by checkpoint name (tensor_roles.hpp).
#include "stormo/toolkit/tensor_roles.hpp"

namespace stormo::toolkit {
namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

bool is_norm_parameter(std::string_view name) {
    const size_t last = name.rfind('.');
    if (last == std::string_view::npos) return false;
    const std::string_view module = name.substr(0, last);
    const size_t prev = module.rfind('.');
    const std::string_view leaf = prev == std::string_view::npos ? module : module.substr(prev + 1);
    return leaf.ends_with("norm");
}

TensorRole classify_decoder_tensor(std::string_view n, std::initializer_list<std::string_view> router_parts) {
    if (n.starts_with("model.embed_tokens.")) return TensorRole::embedding;
    if (n.starts_with("lm_head.")) return TensorRole::head;
    if (n.starts_with("model.norm.")) return TensorRole::norm;
    if (!n.starts_with("model.layers.")) return TensorRole::other;
    // Routed experts, per expert or fused over the expert axis.
    if (contains(n, ".mlp.experts.")) return TensorRole::experts;
    for (const std::string_view part : router_parts)
        if (contains(n, part)) return TensorRole::router;
    if (contains(n, ".mlp.")) return TensorRole::dense_ffn;
    if (is_norm_parameter(n)) return TensorRole::norm;
    if (contains(n, ".self_attn.")) return TensorRole::attention;
    return TensorRole::other;
}

std::vector<std::string> decoder_layer_prefixes(int64_t first, int64_t count) {
    std::vector<std::string> prefixes;
    for (int64_t l = first; l < first + count; ++l) prefixes.push_back("model.layers." + std::to_string(l) + ".");
    return prefixes;
}

}  // namespace stormo::toolkit
