// llama.cpp's "glm-dsa" architecture onto the glm_dsa family: the config transformers'
// GlmMoeDsaConfig would hold, and the tensors under the checkpoints' names and layouts.
// llama.cpp's converter (conversion/glm.py GlmMoeDsaModel on deepseek.py's DeepseekV2Model)
// renamed every tensor, stacked each layer's per-expert matrices into ffn_*_exps [E, out, in], and
// split MLA's kv_b_proj [heads * (nope + v), kv_lora] per head into attn_k_b (transposed:
// [heads, kv_lora, nope]) and attn_v_b [heads, v, kv_lora], writing the attention as one kv head of
// kv_lora + rope (key_length) and kv_lora (value_length) for its absorbed form. This undoes the
// split and the stacking; nothing else was changed (no rope permutation).
#include <string>

#include "glm_dsa_family.hpp"
#include "stormo/toolkit/gguf_mapping.hpp"

namespace stormo::glm_dsa {
namespace {

using namespace toolkit::gguf;

// llama.cpp's expert_gating_func values (LLAMA_EXPERT_GATING_FUNC_TYPE_*): 0 (absent) is taken as
// sigmoid for this architecture, as GLM's router is.
constexpr uint64_t kGatingNone = 0, kGatingSigmoid = 2;
// From this training context on, llama.cpp takes a file without indexer_types for GLM-5.2, whose
// layers share indexers (models/glm-dsa.cpp); the family runs a full indexer in every layer.
constexpr uint64_t kGlm52Context = 1048576;

struct Dims {
    uint64_t hidden = 0, layers = 0, mtp = 0, heads = 0, q_lora = 0, kv_lora = 0, rope = 0, nope = 0, v = 0;
    uint64_t inter = 0, moe_inter = 0, experts = 0, top_k = 0, shared = 0, dense = 0, groups = 1, groups_used = 1;
    uint64_t index_heads = 0, index_dim = 0, index_topk = 0, vocab = 0, context = 0;
    double scale = 1.0;
    bool norm = false;
};

Expected<void> read_attention(const Keys& k, Dims& d) {
    STORMO_TRY_ASSIGN(d.heads, k.count(k.arch_key("attention.head_count")));
    STORMO_TRY_ASSIGN(const uint64_t kv_heads, k.count(k.arch_key("attention.head_count_kv")));
    if (kv_heads != 1)
        return tl::unexpected(k.refuse("attention.head_count_kv", "is " + std::to_string(kv_heads) +
                                                                      "; llama.cpp's converter writes MLA as one kv head"));
    STORMO_TRY_ASSIGN(d.q_lora, k.count(k.arch_key("attention.q_lora_rank")));
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
    STORMO_TRY_ASSIGN(d.index_heads, k.count(k.arch_key("attention.indexer.head_count")));
    STORMO_TRY_ASSIGN(d.index_dim, k.count(k.arch_key("attention.indexer.key_length")));
    STORMO_TRY_ASSIGN(d.index_topk, k.count(k.arch_key("attention.indexer.top_k")));
    return {};
}

// Every layer must run a full indexer: what indexer_types says, or llama.cpp's default for the
// training context.
Expected<void> require_full_indexers(const Keys& k, const Dims& d) {
    const GgufValue* types = k.find(k.arch_key("attention.indexer_types"));
    if (types == nullptr) {
        if (d.context >= kGlm52Context)
            return tl::unexpected(k.refuse("context_length", "is " + std::to_string(d.context) +
                                                                 " without attention.indexer_types: llama.cpp then shares indexers "
                                                                 "between layers as GLM-5.2 does, which glm_dsa does not support"));
        return {};
    }
    for (uint64_t l = 0; l < d.layers; ++l) {
        const auto full = types->is_array() ? types->int_at(l) : types->as_int();
        if (!full || *full == 0)
            return tl::unexpected(k.refuse("attention.indexer_types", "makes layer " + std::to_string(l) +
                                                                          " share an indexer, which glm_dsa does not support"));
    }
    return {};
}

Expected<void> read_experts(const Keys& k, Dims& d) {
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
    STORMO_TRY_ASSIGN(const uint64_t gating, k.count_or(k.arch_key("expert_gating_func"), kGatingNone));
    if (gating != kGatingNone && gating != kGatingSigmoid)
        return tl::unexpected(k.refuse("expert_gating_func", "is " + std::to_string(gating) +
                                                                 "; glm_dsa's router is a sigmoid (2)"));
    if (d.dense > d.layers)
        return tl::unexpected(k.refuse("leading_dense_block_count", "is " + std::to_string(d.dense) + " of " +
                                                                        std::to_string(d.layers) + " layers",
                                       ErrorKind::format));
    return {};
}

Expected<Dims> read_dims(const GgufView& model, const Keys& k) {
    Dims d;
    STORMO_TRY_ASSIGN(d.hidden, k.count(k.arch_key("embedding_length")));
    STORMO_TRY_ASSIGN(const uint64_t blocks, k.count(k.arch_key("block_count")));
    // block_count includes the multi-token-prediction layers the converter appends.
    STORMO_TRY_ASSIGN(d.mtp, k.count_or(k.arch_key("nextn_predict_layers"), 0));
    if (d.mtp >= blocks)
        return tl::unexpected(k.refuse("nextn_predict_layers", "is " + std::to_string(d.mtp) + " of " +
                                                                   std::to_string(blocks) + " blocks",
                                       ErrorKind::format));
    d.layers = blocks - d.mtp;
    STORMO_TRY_ASSIGN(d.context, k.count(k.arch_key("context_length")));
    STORMO_TRY(read_attention(k, d));
    STORMO_TRY(require_full_indexers(k, d));
    STORMO_TRY(read_experts(k, d));
    STORMO_TRY_ASSIGN(d.vocab, embedding_rows(model, k));
    STORMO_TRY_ASSIGN(const uint64_t vocab_key, k.count_or(k.arch_key("vocab_size"), d.vocab));
    if (vocab_key != d.vocab)
        return tl::unexpected(k.refuse("vocab_size", "is " + std::to_string(vocab_key) + ", token_embd.weight has " +
                                                         std::to_string(d.vocab) + " rows",
                                       ErrorKind::mismatch));
    // Last: the keys above are read and checked without sizing anything by them.
    STORMO_TRY(require_last_block(model, k, blocks, d.layers));
    return d;
}

Expected<std::string> config_json(const GgufView& model, const Keys& k, const Dims& d, std::optional<int64_t> eos) {
    JsonObject j;
    j.raw("architectures", "[\"GlmMoeDsaForCausalLM\"]").text("model_type", "glm_moe_dsa");
    j.integer("hidden_size", d.hidden).integer("num_hidden_layers", d.layers).integer("num_attention_heads", d.heads);
    j.integer("vocab_size", d.vocab).integer("q_lora_rank", d.q_lora).integer("kv_lora_rank", d.kv_lora);
    j.integer("qk_nope_head_dim", d.nope).integer("qk_rope_head_dim", d.rope).integer("v_head_dim", d.v);
    j.integer("intermediate_size", d.inter).integer("moe_intermediate_size", d.moe_inter);
    j.integer("n_routed_experts", d.experts).integer("num_experts_per_tok", d.top_k).integer("n_shared_experts", d.shared);
    j.integer("first_k_dense_replace", d.dense).integer("n_group", d.groups).integer("topk_group", d.groups_used);
    j.flag("norm_topk_prob", d.norm).number("routed_scaling_factor", d.scale);
    j.text("scoring_func", "sigmoid").text("topk_method", "noaux_tc");
    j.integer("index_n_heads", d.index_heads).integer("index_head_dim", d.index_dim).integer("index_topk", d.index_topk);
    if (d.mtp) j.integer("num_nextn_predict_layers", d.mtp);
    j.flag("attention_bias", false);
    // GLM's attention has not been checked against DeepSeek-style YaRN (Yarn::deepseek): refused.
    STORMO_TRY(add_common_fields(j, model, k, Yarn::refuse, eos));
    return j.str();
}

Expected<void> map_attention(const GgufView& model, MappedModel& m, const Dims& d, int l) {
    const auto H = d.hidden;
    auto plain = [&](const char* gguf_name, const char* hf_name, std::vector<uint64_t> ne) {
        return copy_tensor(model, m, blk(l, gguf_name), hf(l, hf_name), std::move(ne));
    };
    STORMO_TRY(plain("attn_q_a.weight", "self_attn.q_a_proj.weight", {H, d.q_lora}));
    STORMO_TRY(plain("attn_q_a_norm.weight", "self_attn.q_a_layernorm.weight", {d.q_lora}));
    STORMO_TRY(plain("attn_q_b.weight", "self_attn.q_b_proj.weight", {d.q_lora, d.heads * (d.nope + d.rope)}));
    STORMO_TRY(plain("attn_kv_a_mqa.weight", "self_attn.kv_a_proj_with_mqa.weight", {H, d.kv_lora + d.rope}));
    STORMO_TRY(plain("attn_kv_a_norm.weight", "self_attn.kv_a_layernorm.weight", {d.kv_lora}));
    STORMO_TRY(join_kv_b(model, m, l, {d.heads, d.kv_lora, d.nope, d.v}));
    STORMO_TRY(plain("attn_output.weight", "self_attn.o_proj.weight", {d.heads * d.v, H}));
    STORMO_TRY(plain("indexer.attn_q_b.weight", "self_attn.indexer.wq_b.weight", {d.q_lora, d.index_heads * d.index_dim}));
    STORMO_TRY(plain("indexer.attn_k.weight", "self_attn.indexer.wk.weight", {H, d.index_dim}));
    STORMO_TRY(plain("indexer.k_norm.weight", "self_attn.indexer.k_norm.weight", {d.index_dim}));
    STORMO_TRY(plain("indexer.k_norm.bias", "self_attn.indexer.k_norm.bias", {d.index_dim}));
    STORMO_TRY(plain("indexer.proj.weight", "self_attn.indexer.weights_proj.weight", {H, d.index_heads}));
    return {};
}

Expected<void> map_ffn(const GgufView& model, MappedModel& m, const Dims& d, int l) {
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

Expected<MappedModel> map_glm_dsa(const GgufView& model, const Keys& k) {
    STORMO_TRY_ASSIGN(const Dims d, read_dims(model, k));
    STORMO_TRY_ASSIGN(MappedModel m, mapped_config(k, d.vocab, [&](auto eos) { return config_json(model, k, d, eos); }));

    const auto H = d.hidden, V = d.vocab;
    STORMO_TRY(copy_ends(model, m, H, V));
    // The multi-token-prediction blocks past num_hidden_layers are not mapped: the family does not
    // load them.
    for (int l = 0; l < static_cast<int>(d.layers); ++l) {
        STORMO_TRY(copy_layer_norms(model, m, l, H, "ffn_norm"));
        STORMO_TRY(map_attention(model, m, d, l));
        STORMO_TRY(map_ffn(model, m, d, l));
    }
    return m;
}

}  // namespace

std::vector<std::string> GlmDsaFamily::gguf_architectures() const { return {"glm-dsa"}; }

Expected<GgufMappedModel> GlmDsaFamily::map_gguf(const GgufView& file) const { return map_glm_dsa(file, Keys(file)); }

}  // namespace stormo::glm_dsa
