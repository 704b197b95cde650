#pragma once
// Checkpoint tensor names of Qwen3-MoE (transformers' Qwen3MoeForCausalLM state dict, as the hub's
// Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B files write them).
#include <string>

namespace stormo::qwen3_moe::names {

inline const char* const kEmbedding = "model.embed_tokens.weight";
inline const char* const kFinalNorm = "model.norm.weight";
inline const char* const kHead = "lm_head.weight";

inline std::string layer(int l) { return "model.layers." + std::to_string(l) + "."; }
inline std::string attention(int l, const char* part) { return layer(l) + "self_attn." + part; }
inline std::string router(int l) { return layer(l) + "mlp.gate.weight"; }
inline std::string dense_mlp(int l, const char* proj) { return layer(l) + "mlp." + proj + ".weight"; }
// One tensor per expert: "{e}" stands for the expert id (the expert store's pattern).
inline std::string expert(int l, const char* proj) { return layer(l) + "mlp.experts.{e}." + proj + ".weight"; }

}  // namespace stormo::qwen3_moe::names
