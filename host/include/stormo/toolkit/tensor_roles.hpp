#pragma once
// Tensor roles by checkpoint name, for the decoder families whose transformers state dict reads
// model.embed_tokens, model.layers.N.{self_attn,mlp}.*, model.norm and lm_head: what `inspect`
// and the bench count by role. A family names only the parts of its MLP that are the router.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/family.hpp"

namespace stormo::toolkit {

// The module a parameter belongs to ends in "norm" (input_layernorm, post_attention_layernorm,
// q_norm, q_a_layernorm, indexer.k_norm, model.norm, ...).
bool is_norm_parameter(std::string_view name);

// embedding, head, final norm; inside a layer: ".mlp.experts." experts, a `router_parts` match
// router, the rest of ".mlp." dense_ffn (dense MLPs and shared experts), norms, ".self_attn."
// attention; anything else (e.g. a multi-token-prediction layer's eh_proj) other.
TensorRole classify_decoder_tensor(std::string_view name, std::initializer_list<std::string_view> router_parts);

// The name prefixes ("model.layers.N.") of `count` layers from `first` on: the multi-token-prediction
// layers a checkpoint stores after its num_hidden_layers decoder layers, for ModelSummary::draft_layers.
std::vector<std::string> decoder_layer_prefixes(int64_t first, int64_t count);

}  // namespace stormo::toolkit
