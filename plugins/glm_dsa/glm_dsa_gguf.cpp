// llama.cpp's "glm-dsa" architecture onto the glm_dsa family: the config transformers'
// GlmMoeDsaConfig would hold, and the tensors under the checkpoints' names and layouts.
// llama.cpp's converter (conversion/glm.py GlmMoeDsaModel on deepseek.py's DeepseekV2Model)
// renamed every tensor, stacked each layer's per-expert matrices into ffn_*_exps [E, out, in], and
// split MLA's kv_b_proj [heads * (nope + v), kv_lora] per head into attn_k_b (transposed:
// [heads, kv_lora, nope]) and attn_v_b [heads, v, kv_lora], writing the attention as one kv head of
// kv_lora + rope (key_length) and kv_lora (value_length) for its absorbed form. The toolkit's
// mapping of that layout (gguf_mla_mapping.hpp, shared with deepseek2) undoes the split and the
// stacking; nothing else was changed (no rope permutation). This file holds the DSA indexer's keys
// and tensors, the router's gating and the config.
#include <string>

#include "glm_dsa_family.hpp"
#include "stormo/toolkit/gguf_mla_mapping.hpp"

namespace stormo::glm_dsa {
namespace {

using namespace toolkit::gguf;

// llama.cpp's expert_gating_func values (LLAMA_EXPERT_GATING_FUNC_TYPE_*): 0 (absent) is taken as
// sigmoid for this architecture, as GLM's router is.
constexpr uint64_t kGatingNone = 0, kGatingSigmoid = 2;
// From this training context on, llama.cpp takes a file without indexer_types for GLM-5.2, whose
// layers share indexers (models/glm-dsa.cpp); the family runs a full indexer in every layer.
constexpr uint64_t kGlm52Context = 1048576;

// The converter's DeepseekV2Model keys, and the DSA indexer's and the training context GLM adds.
struct Dims : MlaMoeDims {
    uint64_t index_heads = 0, index_dim = 0, index_topk = 0, context = 0;
};

Expected<void> read_indexer(const Keys& k, Dims& d) {
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

Expected<void> require_sigmoid_router(const Keys& k) {
    STORMO_TRY_ASSIGN(const uint64_t gating, k.count_or(k.arch_key("expert_gating_func"), kGatingNone));
    if (gating != kGatingNone && gating != kGatingSigmoid)
        return tl::unexpected(k.refuse("expert_gating_func", "is " + std::to_string(gating) +
                                                                 "; glm_dsa's router is a sigmoid (2)"));
    return {};
}

Expected<Dims> read_dims(const GgufView& model, const Keys& k) {
    Dims d;
    STORMO_TRY(read_mla_blocks(k, d));
    STORMO_TRY_ASSIGN(d.context, k.count(k.arch_key("context_length")));
    STORMO_TRY(read_mla_attention(k, d, QLoraRank::required));
    STORMO_TRY(read_indexer(k, d));
    STORMO_TRY(require_full_indexers(k, d));
    STORMO_TRY(read_moe_keys(k, d));
    STORMO_TRY(require_sigmoid_router(k));
    STORMO_TRY(check_mla_moe_dims(model, k, d));
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

Expected<void> map_indexer(const GgufView& model, MappedModel& m, const Dims& d, int l) {
    const auto H = d.hidden;
    auto plain = [&](const char* gguf_name, const char* hf_name, std::vector<uint64_t> ne) {
        return copy_tensor(model, m, blk(l, gguf_name), hf(l, hf_name), std::move(ne));
    };
    STORMO_TRY(plain("indexer.attn_q_b.weight", "self_attn.indexer.wq_b.weight", {d.q_lora, d.index_heads * d.index_dim}));
    STORMO_TRY(plain("indexer.attn_k.weight", "self_attn.indexer.wk.weight", {H, d.index_dim}));
    STORMO_TRY(plain("indexer.k_norm.weight", "self_attn.indexer.k_norm.weight", {d.index_dim}));
    STORMO_TRY(plain("indexer.k_norm.bias", "self_attn.indexer.k_norm.bias", {d.index_dim}));
    STORMO_TRY(plain("indexer.proj.weight", "self_attn.indexer.weights_proj.weight", {H, d.index_heads}));
    return {};
}

Expected<MappedModel> map_glm_dsa(const GgufView& model, const Keys& k) {
    STORMO_TRY_ASSIGN(const Dims d, read_dims(model, k));
    STORMO_TRY_ASSIGN(MappedModel m, mapped_config(k, d.vocab, [&](auto eos) { return config_json(model, k, d, eos); }));
    STORMO_TRY(map_mla_moe_tensors(model, m, d, [&](int l) { return map_indexer(model, m, d, l); }));
    return m;
}

}  // namespace

std::vector<std::string> GlmDsaFamily::gguf_architectures() const { return {"glm-dsa"}; }

Expected<GgufMappedModel> GlmDsaFamily::map_gguf(const GgufView& file) const { return map_glm_dsa(file, Keys(file)); }

}  // namespace stormo::glm_dsa
