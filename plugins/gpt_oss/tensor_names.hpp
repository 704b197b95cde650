#pragma once
// Checkpoint tensor names of GPT-OSS (transformers' GptOssForCausalLM state dict).
#include <string>

namespace stormo::gpt_oss::names {

inline const char* const kEmbedding = "model.embed_tokens.weight";
inline const char* const kFinalNorm = "model.norm.weight";
inline const char* const kHead = "lm_head.weight";

inline std::string layer(int l) { return "model.layers." + std::to_string(l) + "."; }
inline std::string attention(int l, const char* part) { return layer(l) + "self_attn." + part; }
inline std::string router(int l, const char* part) { return layer(l) + "mlp.router." + part; }
inline std::string experts_module(int l) { return layer(l) + "mlp.experts"; }
inline std::string experts(int l, const char* part) { return experts_module(l) + "." + part; }

}  // namespace stormo::gpt_oss::names
