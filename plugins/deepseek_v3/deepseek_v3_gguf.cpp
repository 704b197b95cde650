// llama.cpp's "deepseek2" architecture onto the deepseek_v3 family: the config transformers'
// DeepseekV3Config would hold, and the tensors under the checkpoints' names and layouts.
// llama.cpp's converter (conversion/deepseek.py DeepseekV2Model, which writes DeepseekV2, V3, R1
// and Kimi-K2 checkpoints alike) renamed every tensor, stacked each layer's per-expert matrices
// into ffn_*_exps [E, out, in], and split MLA's kv_b_proj into attn_k_b and attn_v_b for its
// absorbed form, writing the attention as one kv head of kv_lora + rope (key_length) and kv_lora
// (value_length). The toolkit's mapping of that layout (gguf_mla_mapping.hpp, shared with glm-dsa)
// undoes the split and the stacking; this file holds the router's gating and the config. The rope rows are the checkpoint's, not
// permuted: llama.cpp rotates this architecture's rope dimensions in interleaved pairs, DeepSeek's
// own layout, so the mapped config says rope_interleave.
#include <string>

#include "deepseek_v3_family.hpp"
#include "stormo/toolkit/gguf_mla_mapping.hpp"

namespace stormo::deepseek_v3 {
namespace {

using namespace toolkit::gguf;

// llama.cpp's expert_gating_func values (LLAMA_EXPERT_GATING_FUNC_TYPE_*).
constexpr uint64_t kGatingNone = 0, kGatingSoftmax = 1, kGatingSigmoid = 2;

// The converter's DeepseekV2Model keys are all this architecture has.
using Dims = MlaMoeDims;

// The router must be DeepSeek-V3's sigmoid. llama.cpp takes a file without expert_gating_func as
// DeepSeek-V2's softmax (files written before the key existed), but the converter leaves the key
// out whenever config.json has no scoring_func, as transformers 5 saves DeepseekV3Config: such a
// file carries V3's e_score_correction_bias (exp_probs_b), which V2's router does not have, and
// is read as the sigmoid router it was converted from.
Expected<void> require_sigmoid_router(const GgufView& model, const Keys& k, const Dims& d) {
    STORMO_TRY_ASSIGN(const uint64_t gating, k.count_or(k.arch_key("expert_gating_func"), kGatingNone));
    if (gating == kGatingSigmoid || d.dense == d.layers) return {};
    if (gating == kGatingNone && model.tensor(blk(static_cast<int>(d.dense), "exp_probs_b.bias")) != nullptr) return {};
    const std::string what = gating == kGatingNone ? "is absent and the MoE layers have no exp_probs_b: llama.cpp reads that as "
                                                     "DeepSeek-V2's softmax router"
                           : gating == kGatingSoftmax ? "is 1, a softmax router"
                                                      : "is " + std::to_string(gating);
    return tl::unexpected(k.refuse("expert_gating_func", what + "; deepseek_v3's router is a sigmoid (2)"));
}

Expected<Dims> read_dims(const GgufView& model, const Keys& k) {
    Dims d;
    STORMO_TRY(read_mla_blocks(k, d));
    STORMO_TRY(read_mla_attention(k, d, QLoraRank::optional));
    STORMO_TRY(read_moe_keys(k, d));
    STORMO_TRY(check_mla_moe_dims(model, k, d));
    STORMO_TRY(require_sigmoid_router(model, k, d));
    return d;
}

Expected<std::string> config_json(const GgufView& model, const Keys& k, const Dims& d, std::optional<int64_t> eos) {
    JsonObject j;
    j.raw("architectures", "[\"DeepseekV3ForCausalLM\"]").text("model_type", "deepseek_v3");
    j.integer("hidden_size", d.hidden).integer("num_hidden_layers", d.layers).integer("num_attention_heads", d.heads);
    j.integer("num_key_value_heads", d.heads).integer("vocab_size", d.vocab);
    if (d.q_lora)
        j.integer("q_lora_rank", d.q_lora);
    else
        j.raw("q_lora_rank", "null");
    j.integer("kv_lora_rank", d.kv_lora).integer("qk_nope_head_dim", d.nope).integer("qk_rope_head_dim", d.rope);
    j.integer("v_head_dim", d.v).flag("rope_interleave", true);
    j.integer("intermediate_size", d.inter).integer("moe_intermediate_size", d.moe_inter).text("hidden_act", "silu");
    j.integer("n_routed_experts", d.experts).integer("num_experts_per_tok", d.top_k).integer("n_shared_experts", d.shared);
    j.integer("first_k_dense_replace", d.dense).integer("n_group", d.groups).integer("topk_group", d.groups_used);
    j.flag("norm_topk_prob", d.norm).number("routed_scaling_factor", d.scale);
    j.text("scoring_func", "sigmoid").text("topk_method", "noaux_tc");
    if (d.mtp) j.integer("num_nextn_predict_layers", d.mtp);
    j.flag("attention_bias", false);
    STORMO_TRY(add_common_fields(j, model, k, Yarn::deepseek, eos));
    return j.str();
}

Expected<MappedModel> map_deepseek2(const GgufView& model, const Keys& k) {
    STORMO_TRY_ASSIGN(const Dims d, read_dims(model, k));
    STORMO_TRY_ASSIGN(MappedModel m, mapped_config(k, d.vocab, [&](auto eos) { return config_json(model, k, d, eos); }));
    STORMO_TRY(map_mla_moe_tensors(model, m, d));
    return m;
}

}  // namespace

std::vector<std::string> DeepseekV3Family::gguf_architectures() const { return {"deepseek2"}; }

Expected<GgufMappedModel> DeepseekV3Family::map_gguf(const GgufView& file) const { return map_deepseek2(file, Keys(file)); }

}  // namespace stormo::deepseek_v3
