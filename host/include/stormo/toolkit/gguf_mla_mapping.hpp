#pragma once
// The GGUF layout llama.cpp's converter writes through its DeepseekV2Model (conversion/deepseek.py)
// for every architecture built on it: deepseek2 (DeepSeek-V2, V3, R1, Kimi-K2, GLM-4.7-Flash) and
// glm-dsa (GLM-5, conversion/glm.py GlmMoeDsaModel). Multi-head latent attention (MLA) written as
// one kv head for its absorbed form with kv_b_proj split in two, and a MoE FFN after some dense
// layers whose experts are stacked. One reading of the keys and one mapping onto transformers'
// names serve the families that claim these architectures (plugins/deepseek_v3, plugins/glm_dsa);
// what is a family's own (its router's gating, GLM's indexer, YaRN) stays in its mapping.
#include <cstdint>
#include <functional>

#include "stormo/toolkit/gguf_mapping.hpp"

namespace stormo::toolkit::gguf {

// The widths of MLA that its kv_b_proj's layout depends on.
struct MlaWidths {
    uint64_t heads = 0, kv_lora = 0, nope = 0, v = 0;
};

// Layer l's self_attn.kv_b_proj.weight as the checkpoints hold it, [heads * (nope + v), kv_lora]
// (per head its nope key rows, then its value rows), joined again from the two halves the
// converter splits it into for the absorbed form: attn_k_b ne {nope, kv_lora, heads} (each head's
// key part transposed) and attn_v_b ne {kv_lora, v, heads}. As float32 values: the halves may
// differ in type (a Q8_0 file keeps attn_k_b F16 when its rows of nope values are no whole block).
Expected<void> join_kv_b(const GgufView& model, MappedModel& m, int layer, const MlaWidths& w);

// The dimensions the layout's "<arch>.*" keys give, in transformers' DeepseekV3Config terms. A
// family's own keys go in a struct derived from this one.
struct MlaMoeDims {
    uint64_t hidden = 0, blocks = 0, layers = 0, mtp = 0;
    uint64_t heads = 0, q_lora = 0, kv_lora = 0, rope = 0, nope = 0, v = 0;
    uint64_t inter = 0, moe_inter = 0, experts = 0, top_k = 0, shared = 0, dense = 0, groups = 1, groups_used = 1;
    uint64_t vocab = 0;
    double scale = 1.0;
    bool norm = false;
    // Whether the query goes through q_a_proj and q_b_proj (attn_q_a, attn_q_b) rather than one
    // q_proj (attn_q).
    bool q_lora_split = true;
};

// hidden, blocks and layers: block_count less the nextn_predict_layers (multi-token prediction)
// the converter appends after the decoder's.
Expected<void> read_mla_blocks(const Keys& k, MlaMoeDims& d);

// Whether the architecture may leave attention.q_lora_rank out (a checkpoint without q_lora_rank:
// one q_proj) or must carry it.
enum class QLoraRank { optional, required };

// heads, q_lora, kv_lora, rope, nope, v from the attention keys, checked to be the one kv head of
// kv_lora + rope key and kv_lora value widths that the absorbed form implies.
Expected<void> read_mla_attention(const Keys& k, MlaMoeDims& d, QLoraRank q_lora);

// The FFN's widths, the expert counts and the router's groups, scale and renormalisation, with
// llama.cpp's defaults for the optional keys. Not the router's gating: that is the family's.
Expected<void> read_moe_keys(const Keys& k, MlaMoeDims& d);

// The counts checked against each other and the file, after the family's own key checks: the
// leading dense layers within the layers, vocab from token_embd.weight (vocab_size, when present,
// must agree), and last the last layer's attn_norm present (require_last_block), so nothing is
// sized by an unchecked block_count.
Expected<void> check_mla_moe_dims(const GgufView& model, const Keys& k, MlaMoeDims& d);

// Layer l's MLA projections onto self_attn.*: the query's (one or two, with its norm), the
// compressed kv and its norm, kv_b_proj joined again, o_proj.
Expected<void> map_mla_attention(const GgufView& model, MappedModel& m, const MlaMoeDims& d, int l);

// Layer l's FFN onto mlp.*: the dense MLP for the first `dense` layers; after them the router
// (gate and its e_score_correction_bias), the routed experts unstacked and the shared experts.
Expected<void> map_moe_ffn(const GgufView& model, MappedModel& m, const MlaMoeDims& d, int l);

// A family's own tensors of layer l (GLM's DSA indexer), mapped after the layer's attention.
using LayerExtra = std::function<Expected<void>(int layer)>;

// Every tensor of the decoder's d.layers layers: the ends (copy_ends), then per layer its norms
// (ffn_norm is the post-attention one), map_mla_attention, `extra` when given, map_moe_ffn. The
// multi-token-prediction blocks past them are not mapped: the families do not load them.
Expected<void> map_mla_moe_tensors(const GgufView& model, MappedModel& m, const MlaMoeDims& d, const LayerExtra& extra = {});

}  // namespace stormo::toolkit::gguf
