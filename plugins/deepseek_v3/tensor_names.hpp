#pragma once
// Checkpoint tensor names of DeepSeek-V3 (transformers' DeepseekV3ForCausalLM state dict, as
// deepseek-ai's and moonshotai's hub files write them). Layers from num_hidden_layers on are the
// multi-token-prediction layers (model.layers.61.* in DeepSeek-V3), which the forward pass does
// not load.
#include <string>

namespace stormo::deepseek_v3::names {

inline const char* const kEmbedding = "model.embed_tokens.weight";
inline const char* const kFinalNorm = "model.norm.weight";
inline const char* const kHead = "lm_head.weight";

inline std::string layer(int l) { return "model.layers." + std::to_string(l) + "."; }
inline std::string attention_module(int l) { return layer(l) + "self_attn"; }
inline std::string mlp(int l, const std::string& part) { return layer(l) + "mlp." + part; }

}  // namespace stormo::deepseek_v3::names
