#pragma once
// Checkpoint tensor names of GLM-MoE-DSA (transformers' GlmMoeDsaForCausalLM state dict, as
// zai-org's GLM-5 files write them). Layers from num_hidden_layers on are multi-token-prediction
// layers, which the forward pass does not load.
#include <string>

namespace stormo::glm_dsa::names {

inline const char* const kEmbedding = "model.embed_tokens.weight";
inline const char* const kFinalNorm = "model.norm.weight";
inline const char* const kHead = "lm_head.weight";

inline std::string layer(int l) { return "model.layers." + std::to_string(l) + "."; }
inline std::string attention_module(int l) { return layer(l) + "self_attn"; }
inline std::string indexer(int l, const std::string& part) { return layer(l) + "self_attn.indexer." + part; }
inline std::string mlp(int l, const std::string& part) { return layer(l) + "mlp." + part; }

}  // namespace stormo::glm_dsa::names
