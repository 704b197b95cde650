// llama.cpp's "qwen3moe" architecture onto the qwen3_moe family: the config transformers'
// Qwen3MoeConfig would hold, and the tensors under the hub checkpoints' names and layouts.
// llama.cpp's converter (conversion/qwen.py, Qwen2MoeModel) renamed every tensor, stacked each
// layer's per-expert matrices into ffn_{gate,up,down}_exps [E, out, in] and otherwise changed
// nothing (no rope permutation: llama.cpp runs Qwen3 with NeoX rotation, as transformers); this
// unstacks the experts again.
#include <string>

#include "qwen3_moe_family.hpp"
#include "stormo/quote.hpp"
#include "stormo/toolkit/gguf_mapping.hpp"

namespace stormo::qwen3_moe {
namespace {

using namespace toolkit::gguf;

struct Dims {
    uint64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, moe_inter = 0, experts = 0, top_k = 0, vocab = 0;
};

Expected<Dims> read_dims(const GgufView& model, const Keys& k) {
    Dims d;
    STORMO_TRY_ASSIGN(d.hidden, k.count(k.arch_key("embedding_length")));
    STORMO_TRY_ASSIGN(d.layers, k.count(k.arch_key("block_count")));
    STORMO_TRY_ASSIGN(d.heads, k.count(k.arch_key("attention.head_count")));
    STORMO_TRY_ASSIGN(d.kv_heads, k.count(k.arch_key("attention.head_count_kv")));
    if (d.heads == 0) return tl::unexpected(k.refuse("attention.head_count", "is 0", ErrorKind::format));
    // llama.cpp's rule when the key is absent: one head is embedding_length / head_count wide.
    STORMO_TRY_ASSIGN(d.head_dim, k.count_or(k.arch_key("attention.key_length"), d.hidden / d.heads));
    STORMO_TRY_ASSIGN(const uint64_t value_length, k.count_or(k.arch_key("attention.value_length"), d.head_dim));
    if (value_length != d.head_dim)
        return tl::unexpected(k.refuse("attention.value_length", "is " + std::to_string(value_length) + ", not key_length " +
                                                                     std::to_string(d.head_dim) + " (qwen3_moe has one head_dim)"));
    // Qwen3 rotates the whole head; a partial rotation has no config.json field in qwen3_moe.
    STORMO_TRY_ASSIGN(const uint64_t rotated, k.count_or(k.arch_key("rope.dimension_count"), d.head_dim));
    if (rotated != d.head_dim)
        return tl::unexpected(k.refuse("rope.dimension_count", "is " + std::to_string(rotated) + ", not the head_dim " +
                                                                   std::to_string(d.head_dim) + " (qwen3_moe rotates whole heads)"));
    STORMO_TRY_ASSIGN(d.moe_inter, k.count(k.arch_key("expert_feed_forward_length")));
    STORMO_TRY_ASSIGN(d.experts, k.count(k.arch_key("expert_count")));
    STORMO_TRY_ASSIGN(d.top_k, k.count(k.arch_key("expert_used_count")));
    STORMO_TRY_ASSIGN(d.vocab, embedding_rows(model, k));
    // Last: the keys above are read and checked without sizing anything by them.
    STORMO_TRY(require_last_block(model, k, d.layers, d.layers));
    return d;
}

Expected<std::string> config_json(const GgufView& model, const Keys& k, const Dims& d, std::optional<int64_t> eos) {
    JsonObject j;
    j.raw("architectures", "[\"Qwen3MoeForCausalLM\"]").text("model_type", "qwen3_moe");
    j.integer("hidden_size", d.hidden).integer("num_hidden_layers", d.layers);
    j.integer("num_attention_heads", d.heads).integer("num_key_value_heads", d.kv_heads).integer("head_dim", d.head_dim);
    j.integer("vocab_size", d.vocab).integer("num_experts", d.experts).integer("num_experts_per_tok", d.top_k);
    j.integer("moe_intermediate_size", d.moe_inter);
    if (k.find(k.arch_key("feed_forward_length")) != nullptr) {
        STORMO_TRY_ASSIGN(const uint64_t inter, k.count(k.arch_key("feed_forward_length")));
        j.integer("intermediate_size", inter);
    }
    // llama.cpp's qwen3moe makes every layer MoE (its loader requires each layer's experts) and
    // always renormalises the top-k weights (build_moe_ffn with norm_w true); no key says either.
    j.integer("decoder_sparse_step", 1).raw("mlp_only_layers", "[]").flag("norm_topk_prob", true);
    j.flag("attention_bias", false);
    // YaRN as transformers' default (truncate true), which is what llama.cpp computes: it floors
    // and ceils the ramp bounds.
    STORMO_TRY(add_common_fields(j, model, k, Yarn::truncate, eos));
    return j.str();
}

// Forms of a layer llama.cpp accepts and this mapping does not carry over: a fused q/k/v matrix
// and attention biases (no published Qwen3-MoE has either).
Expected<void> refuse_unmapped(const GgufView& model, const Keys& k, uint64_t layers) {
    for (int l = 0; l < static_cast<int>(layers); ++l)
        for (const char* name : {"attn_qkv.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias"})
            if (model.tensor(blk(l, name)) != nullptr)
                return fail(ErrorKind::unsupported, k.path() + ": tensor " + in_quotes(blk(l, name)) +
                                                        " is not mapped onto qwen3_moe (separate q/k/v without biases are)");
    return {};
}

Expected<MappedModel> map_qwen3_moe(const GgufView& model, const Keys& k) {
    STORMO_TRY_ASSIGN(const Dims d, read_dims(model, k));
    STORMO_TRY(refuse_unmapped(model, k, d.layers));
    STORMO_TRY_ASSIGN(MappedModel m, mapped_config(k, d.vocab, [&](auto eos) { return config_json(model, k, d, eos); }));

    const auto H = d.hidden, V = d.vocab, E = d.experts, I = d.moe_inter;
    const auto q_width = d.heads * d.head_dim, kv_width = d.kv_heads * d.head_dim;
    STORMO_TRY(copy_ends(model, m, H, V));
    for (int l = 0; l < static_cast<int>(d.layers); ++l) {
        STORMO_TRY(copy_layer_norms(model, m, l, H, "ffn_norm"));
        STORMO_TRY(copy_tensor(model, m, blk(l, "attn_q.weight"), hf(l, "self_attn.q_proj.weight"), {H, q_width}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "attn_k.weight"), hf(l, "self_attn.k_proj.weight"), {H, kv_width}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "attn_v.weight"), hf(l, "self_attn.v_proj.weight"), {H, kv_width}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "attn_output.weight"), hf(l, "self_attn.o_proj.weight"), {q_width, H}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "attn_q_norm.weight"), hf(l, "self_attn.q_norm.weight"), {d.head_dim}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "attn_k_norm.weight"), hf(l, "self_attn.k_norm.weight"), {d.head_dim}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "ffn_gate_inp.weight"), hf(l, "mlp.gate.weight"), {H, E}));
        STORMO_TRY(unstack_experts(model, m, blk(l, "ffn_gate_exps.weight"), hf(l, "mlp.experts.{e}.gate_proj.weight"), H, I, E));
        STORMO_TRY(unstack_experts(model, m, blk(l, "ffn_up_exps.weight"), hf(l, "mlp.experts.{e}.up_proj.weight"), H, I, E));
        STORMO_TRY(unstack_experts(model, m, blk(l, "ffn_down_exps.weight"), hf(l, "mlp.experts.{e}.down_proj.weight"), I, H, E));
    }
    return m;
}

}  // namespace

std::vector<std::string> Qwen3MoeFamily::gguf_architectures() const { return {"qwen3moe"}; }

Expected<GgufMappedModel> Qwen3MoeFamily::map_gguf(const GgufView& file) const { return map_qwen3_moe(file, Keys(file)); }

}  // namespace stormo::qwen3_moe
