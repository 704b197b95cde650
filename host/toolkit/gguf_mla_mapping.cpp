// The layout llama.cpp's converter writes through DeepseekV2Model: see
// stormo/toolkit/gguf_mla_mapping.hpp.
#include "stormo/toolkit/gguf_mla_mapping.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace stormo::toolkit::gguf {

Expected<void> join_kv_b(const GgufView& model, MappedModel& m, int layer, const MlaWidths& w) {
    STORMO_TRY_ASSIGN(const auto k_b, dequantized(model, blk(layer, "attn_k_b.weight"), {w.nope, w.kv_lora, w.heads}));
    STORMO_TRY_ASSIGN(const auto v_b, dequantized(model, blk(layer, "attn_v_b.weight"), {w.kv_lora, w.v, w.heads}));
    const std::vector<float> k_rows = transpose_each(k_b, w.heads, w.kv_lora, w.nope);  // [heads, nope, kv_lora]
    const uint64_t key_values = w.nope * w.kv_lora, value_values = w.v * w.kv_lora;
    std::vector<float> joined(w.heads * (key_values + value_values));
    for (uint64_t h = 0; h < w.heads; ++h) {
        const auto k_from = k_rows.begin() + static_cast<std::ptrdiff_t>(h * key_values);
        const auto v_from = v_b.begin() + static_cast<std::ptrdiff_t>(h * value_values);
        const auto to = joined.begin() + static_cast<std::ptrdiff_t>(h * (key_values + value_values));
        std::copy(k_from, k_from + static_cast<std::ptrdiff_t>(key_values), to);
        std::copy(v_from, v_from + static_cast<std::ptrdiff_t>(value_values), to + static_cast<std::ptrdiff_t>(key_values));
    }
    add_values(m, hf(layer, "self_attn.kv_b_proj.weight"),
               {static_cast<int64_t>(w.heads * (w.nope + w.v)), static_cast<int64_t>(w.kv_lora)}, std::move(joined));
    return {};
}

Expected<void> read_mla_blocks(const Keys& k, MlaMoeDims& d) {
    STORMO_TRY_ASSIGN(d.hidden, k.count(k.arch_key("embedding_length")));
    STORMO_TRY_ASSIGN(d.blocks, k.count(k.arch_key("block_count")));
    // block_count includes the multi-token-prediction layers a converter appends (llama.cpp's drops
    // DeepSeek-V3's; it keeps GLM-5's and those of GLM-4.7-Flash, which it writes as deepseek2).
    STORMO_TRY_ASSIGN(d.mtp, k.count_or(k.arch_key("nextn_predict_layers"), 0));
    if (d.mtp >= d.blocks)
        return tl::unexpected(k.refuse("nextn_predict_layers", "is " + std::to_string(d.mtp) + " of " +
                                                                   std::to_string(d.blocks) + " blocks",
                                       ErrorKind::format));
    d.layers = d.blocks - d.mtp;
    return {};
}

Expected<void> read_mla_attention(const Keys& k, MlaMoeDims& d, QLoraRank q_lora) {
    STORMO_TRY_ASSIGN(d.heads, k.count(k.arch_key("attention.head_count")));
    STORMO_TRY_ASSIGN(const uint64_t kv_heads, k.count(k.arch_key("attention.head_count_kv")));
    if (kv_heads != 1)
        return tl::unexpected(k.refuse("attention.head_count_kv", "is " + std::to_string(kv_heads) +
                                                                      "; llama.cpp's converter writes MLA as one kv head"));
    if (q_lora == QLoraRank::optional) {
        // Absent when the checkpoint has no q_lora_rank: one q_proj instead of q_a_proj and q_b_proj.
        STORMO_TRY_ASSIGN(d.q_lora, k.count_or(k.arch_key("attention.q_lora_rank"), 0));
        d.q_lora_split = d.q_lora != 0;
    } else {
        STORMO_TRY_ASSIGN(d.q_lora, k.count(k.arch_key("attention.q_lora_rank")));
        d.q_lora_split = true;
    }
    STORMO_TRY_ASSIGN(d.kv_lora, k.count(k.arch_key("attention.kv_lora_rank")));
    STORMO_TRY_ASSIGN(d.rope, k.count(k.arch_key("rope.dimension_count")));
    STORMO_TRY_ASSIGN(const uint64_t qk_head, k.count(k.arch_key("attention.key_length_mla")));
    STORMO_TRY_ASSIGN(d.v, k.count(k.arch_key("attention.value_length_mla")));
    if (qk_head <= d.rope)
        return tl::unexpected(k.refuse("attention.key_length_mla", "is " + std::to_string(qk_head) +
                                                                       ", not more than rope.dimension_count " + std::to_string(d.rope),
                                       ErrorKind::format));
    d.nope = qk_head - d.rope;
    // The absorbed form's widths must be the ones the ranks imply, or the file is not what the
    // converter writes.
    STORMO_TRY_ASSIGN(const uint64_t key_length, k.count(k.arch_key("attention.key_length")));
    STORMO_TRY_ASSIGN(const uint64_t value_length, k.count(k.arch_key("attention.value_length")));
    if (key_length != d.kv_lora + d.rope || value_length != d.kv_lora)
        return tl::unexpected(k.refuse("attention.key_length", "and value_length are " + std::to_string(key_length) + " and " +
                                                                   std::to_string(value_length) + ", not kv_lora_rank + rope dims (" +
                                                                   std::to_string(d.kv_lora + d.rope) + ") and kv_lora_rank",
                                       ErrorKind::format));
    return {};
}

Expected<void> read_moe_keys(const Keys& k, MlaMoeDims& d) {
    STORMO_TRY_ASSIGN(d.inter, k.count(k.arch_key("feed_forward_length")));
    STORMO_TRY_ASSIGN(d.moe_inter, k.count(k.arch_key("expert_feed_forward_length")));
    STORMO_TRY_ASSIGN(d.experts, k.count(k.arch_key("expert_count")));
    STORMO_TRY_ASSIGN(d.top_k, k.count(k.arch_key("expert_used_count")));
    STORMO_TRY_ASSIGN(d.shared, k.count(k.arch_key("expert_shared_count")));
    // llama.cpp's defaults for the optional keys: no leading dense layer, one group (0 groups is
    // no grouping), weights unscaled (a scale of 0 means none) and not renormalised.
    STORMO_TRY_ASSIGN(d.dense, k.count_or(k.arch_key("leading_dense_block_count"), 0));
    STORMO_TRY_ASSIGN(d.groups, k.count_or(k.arch_key("expert_group_count"), 1));
    STORMO_TRY_ASSIGN(d.groups_used, k.count_or(k.arch_key("expert_group_used_count"), 1));
    if (d.groups == 0) d.groups = d.groups_used = 1;
    STORMO_TRY_ASSIGN(d.scale, k.number_or(k.arch_key("expert_weights_scale"), 0.0));
    if (d.scale == 0.0) d.scale = 1.0;
    STORMO_TRY_ASSIGN(d.norm, k.flag_or(k.arch_key("expert_weights_norm"), false));
    return {};
}

Expected<void> check_mla_moe_dims(const GgufView& model, const Keys& k, MlaMoeDims& d) {
    if (d.dense > d.layers)
        return tl::unexpected(k.refuse("leading_dense_block_count", "is " + std::to_string(d.dense) + " of " +
                                                                        std::to_string(d.layers) + " layers",
                                       ErrorKind::format));
    STORMO_TRY_ASSIGN(d.vocab, embedding_rows(model, k));
    STORMO_TRY_ASSIGN(const uint64_t vocab_key, k.count_or(k.arch_key("vocab_size"), d.vocab));
    if (vocab_key != d.vocab)
        return tl::unexpected(k.refuse("vocab_size", "is " + std::to_string(vocab_key) + ", token_embd.weight has " +
                                                         std::to_string(d.vocab) + " rows",
                                       ErrorKind::mismatch));
    // Last: the keys above are read and checked without sizing anything by them.
    return require_last_block(model, k, d.blocks, d.layers);
}

Expected<void> map_mla_attention(const GgufView& model, MappedModel& m, const MlaMoeDims& d, int l) {
    const auto H = d.hidden, qk = d.nope + d.rope;
    auto plain = [&](const char* gguf_name, const char* hf_name, std::vector<uint64_t> ne) {
        return copy_tensor(model, m, blk(l, gguf_name), hf(l, hf_name), std::move(ne));
    };
    if (d.q_lora_split) {
        STORMO_TRY(plain("attn_q_a.weight", "self_attn.q_a_proj.weight", {H, d.q_lora}));
        STORMO_TRY(plain("attn_q_a_norm.weight", "self_attn.q_a_layernorm.weight", {d.q_lora}));
        STORMO_TRY(plain("attn_q_b.weight", "self_attn.q_b_proj.weight", {d.q_lora, d.heads * qk}));
    } else {
        STORMO_TRY(plain("attn_q.weight", "self_attn.q_proj.weight", {H, d.heads * qk}));
    }
    STORMO_TRY(plain("attn_kv_a_mqa.weight", "self_attn.kv_a_proj_with_mqa.weight", {H, d.kv_lora + d.rope}));
    STORMO_TRY(plain("attn_kv_a_norm.weight", "self_attn.kv_a_layernorm.weight", {d.kv_lora}));
    STORMO_TRY(join_kv_b(model, m, l, {d.heads, d.kv_lora, d.nope, d.v}));
    STORMO_TRY(plain("attn_output.weight", "self_attn.o_proj.weight", {d.heads * d.v, H}));
    return {};
}

Expected<void> map_moe_ffn(const GgufView& model, MappedModel& m, const MlaMoeDims& d, int l) {
    const auto H = d.hidden, E = d.experts, I = d.moe_inter;
    auto plain = [&](const char* gguf_name, const char* hf_name, std::vector<uint64_t> ne) {
        return copy_tensor(model, m, blk(l, gguf_name), hf(l, hf_name), std::move(ne));
    };
    if (static_cast<uint64_t>(l) < d.dense) {
        STORMO_TRY(plain("ffn_gate.weight", "mlp.gate_proj.weight", {H, d.inter}));
        STORMO_TRY(plain("ffn_up.weight", "mlp.up_proj.weight", {H, d.inter}));
        STORMO_TRY(plain("ffn_down.weight", "mlp.down_proj.weight", {d.inter, H}));
        return {};
    }
    STORMO_TRY(plain("ffn_gate_inp.weight", "mlp.gate.weight", {H, E}));
    STORMO_TRY(plain("exp_probs_b.bias", "mlp.gate.e_score_correction_bias", {E}));
    STORMO_TRY(unstack_experts(model, m, blk(l, "ffn_gate_exps.weight"), hf(l, "mlp.experts.{e}.gate_proj.weight"), H, I, E));
    STORMO_TRY(unstack_experts(model, m, blk(l, "ffn_up_exps.weight"), hf(l, "mlp.experts.{e}.up_proj.weight"), H, I, E));
    STORMO_TRY(unstack_experts(model, m, blk(l, "ffn_down_exps.weight"), hf(l, "mlp.experts.{e}.down_proj.weight"), I, H, E));
    if (d.shared == 0) return {};
    // The shared experts are one MLP of n_shared_experts times the expert width.
    const uint64_t S = I * d.shared;
    STORMO_TRY(plain("ffn_gate_shexp.weight", "mlp.shared_experts.gate_proj.weight", {H, S}));
    STORMO_TRY(plain("ffn_up_shexp.weight", "mlp.shared_experts.up_proj.weight", {H, S}));
    STORMO_TRY(plain("ffn_down_shexp.weight", "mlp.shared_experts.down_proj.weight", {S, H}));
    return {};
}

Expected<void> map_mla_moe_tensors(const GgufView& model, MappedModel& m, const MlaMoeDims& d, const LayerExtra& extra) {
    STORMO_TRY(copy_ends(model, m, d.hidden, d.vocab));
    for (int l = 0; l < static_cast<int>(d.layers); ++l) {
        STORMO_TRY(copy_layer_norms(model, m, l, d.hidden, "ffn_norm"));
        STORMO_TRY(map_mla_attention(model, m, d, l));
        if (extra) STORMO_TRY(extra(l));
        STORMO_TRY(map_moe_ffn(model, m, d, l));
    }
    // The multi-token-prediction blocks after the decoder's, known and left out.
    for (uint64_t b = d.layers; b < d.blocks; ++b) {
        const std::string prefix = "blk." + std::to_string(b) + ".";
        for (const GgufTensorInfo* t : model.tensors())
            if (t->name.starts_with(prefix)) m.left_out.push_back(t->name);
    }
    return {};
}

}  // namespace stormo::toolkit::gguf
