// Synthetic GLM-MoE-DSA checkpoints (`stormo synth`): zai-org/GLM-5's config.json and state dict,
// and a toy of the same structure for tests.
#include <algorithm>

#include "glm_dsa_family.hpp"
#include "stormo/toolkit/synth.hpp"

namespace stormo::glm_dsa {
namespace {

using toolkit::add_tensor;
using toolkit::bias_fill;
using toolkit::matrix_fill;
using toolkit::norm_fill;

// The hyper-parameters of one GLM-MoE-DSA checkpoint (zai-org/GLM-5's config.json).
struct GlmPreset {
    const char* name;
    const char* description;
    int64_t hidden = 0, intermediate = 0, moe_intermediate = 0, layers = 0, dense_layers = 0, heads = 0;
    int64_t q_lora_rank = 0, kv_lora_rank = 0, nope = 0, rope = 0, v = 0;
    int64_t index_heads = 0, index_dim = 0, index_topk = 0;
    int64_t experts = 0, top_k = 0, shared = 0, vocab = 0, pad = 0;
    std::vector<int64_t> eos;
};

const std::vector<GlmPreset>& glm_presets() {
    static const std::vector<GlmPreset> presets = {
        {"glm-5", "zai-org/GLM-5 shapes: 78 layers (3 dense), 256 experts (top-8) + 1 shared, hidden 6144, MLA, DSA indexer "
                  "(~1.5 TB: cut it with --layers / --experts)",
         6144, 12288, 2048, 78, 3, 64, 2048, 512, 192, 64, 256, 32, 128, 2048, 256, 8, 1, 154880, 154820,
         {154820, 154827, 154829}},
        {"glm-moe-dsa-tiny", "a GLM-MoE-DSA-structured toy for tests: 4 layers (1 dense), 8 experts (top-2), hidden 256 (~5 MB)",
         256, 512, 128, 4, 1, 4, 64, 32, 32, 16, 32, 4, 32, 8, 8, 2, 1, 1024, 1022, {1023}},
    };
    return presets;
}

// config.json as zai-org writes GLM-5's (first_k_dense_replace, n_routed_experts, rope_parameters).
std::string glm_config_json(const GlmPreset& p, int64_t layers) {
    auto num = [](int64_t v) { return std::to_string(v); };
    std::string j = "{\n";
    j += "  \"architectures\": [\n    \"GlmMoeDsaForCausalLM\"\n  ],\n";
    j += "  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n";
    j += "  \"eos_token_id\": " + toolkit::int_list(p.eos) + ",\n";
    j += "  \"first_k_dense_replace\": " + num(std::min(p.dense_layers, layers)) + ",\n";
    j += "  \"hidden_act\": \"silu\",\n  \"hidden_size\": " + num(p.hidden) + ",\n";
    j += "  \"index_head_dim\": " + num(p.index_dim) + ",\n  \"index_n_heads\": " + num(p.index_heads) + ",\n";
    j += "  \"index_topk\": " + num(p.index_topk) + ",\n  \"intermediate_size\": " + num(p.intermediate) + ",\n";
    j += "  \"kv_lora_rank\": " + num(p.kv_lora_rank) + ",\n  \"max_position_embeddings\": 202752,\n";
    j += "  \"model_type\": \"glm_moe_dsa\",\n  \"moe_intermediate_size\": " + num(p.moe_intermediate) + ",\n";
    j += "  \"n_group\": 1,\n  \"n_routed_experts\": " + num(p.experts) + ",\n";
    j += "  \"n_shared_experts\": " + num(p.shared) + ",\n  \"norm_topk_prob\": true,\n";
    j += "  \"num_attention_heads\": " + num(p.heads) + ",\n  \"num_experts_per_tok\": " + num(p.top_k) + ",\n";
    j += "  \"num_hidden_layers\": " + num(layers) + ",\n  \"num_key_value_heads\": " + num(p.heads) + ",\n";
    j += "  \"pad_token_id\": " + num(p.pad) + ",\n  \"q_lora_rank\": " + num(p.q_lora_rank) + ",\n";
    j += "  \"qk_nope_head_dim\": " + num(p.nope) + ",\n  \"qk_rope_head_dim\": " + num(p.rope) + ",\n";
    j += "  \"rms_norm_eps\": 1e-05,\n";
    j += "  \"rope_parameters\": {\n    \"rope_theta\": 8000000,\n    \"rope_type\": \"default\"\n  },\n";
    j += "  \"routed_scaling_factor\": 2.5,\n  \"scoring_func\": \"sigmoid\",\n  \"tie_word_embeddings\": false,\n";
    j += "  \"topk_group\": 1,\n  \"topk_method\": \"noaux_tc\",\n  \"v_head_dim\": " + num(p.v) + ",\n";
    j += "  \"vocab_size\": " + num(p.vocab) + "\n}\n";
    return j;
}

std::string glm_generation_config_json(const GlmPreset& p) {
    return "{\n  \"eos_token_id\": " + toolkit::int_list(p.eos) + ",\n  \"pad_token_id\": " + std::to_string(p.pad) + "\n}\n";
}

// GLM-MoE-DSA's state dict: MLA projections and their norms, the indexer, dense MLPs for the first
// layers, then router (with its F32 correction bias), shared experts and one gate/up/down matrix
// per routed expert. The F32 correction bias takes the uniform stream too: each float is a +-0.02
// BF16 draw in its high half with random low mantissa bits, small values around 0 as a trained
// bias is (zero would leave the router's own scores).
std::vector<SynthTensor> glm_tensors(const GlmPreset& p, int64_t layers) {
    const int64_t experts = p.experts;
    const int64_t h = p.hidden, qkd = p.nope + p.rope;
    std::vector<SynthTensor> t;
    add_tensor(t, "model.embed_tokens.weight", DType::BF16, {p.vocab, h}, toolkit::embedding_fill());
    for (int64_t l = 0; l < layers; ++l) {
        const std::string base = "model.layers." + std::to_string(l) + ".";
        const std::string at = base + "self_attn.";
        add_tensor(t, base + "input_layernorm.weight", DType::BF16, {h}, norm_fill());
        add_tensor(t, at + "q_a_proj.weight", DType::BF16, {p.q_lora_rank, h}, matrix_fill(h));
        add_tensor(t, at + "q_a_layernorm.weight", DType::BF16, {p.q_lora_rank}, norm_fill());
        add_tensor(t, at + "q_b_proj.weight", DType::BF16, {p.heads * qkd, p.q_lora_rank}, matrix_fill(p.q_lora_rank));
        add_tensor(t, at + "kv_a_proj_with_mqa.weight", DType::BF16, {p.kv_lora_rank + p.rope, h}, matrix_fill(h));
        add_tensor(t, at + "kv_a_layernorm.weight", DType::BF16, {p.kv_lora_rank}, norm_fill());
        add_tensor(t, at + "kv_b_proj.weight", DType::BF16, {p.heads * (p.nope + p.v), p.kv_lora_rank},
                   matrix_fill(p.kv_lora_rank));
        add_tensor(t, at + "o_proj.weight", DType::BF16, {h, p.heads * p.v},
                   matrix_fill(p.heads * p.v, toolkit::kAttentionOutputGain));
        add_tensor(t, at + "indexer.wq_b.weight", DType::BF16, {p.index_heads * p.index_dim, p.q_lora_rank},
                   matrix_fill(p.q_lora_rank));
        add_tensor(t, at + "indexer.wk.weight", DType::BF16, {p.index_dim, h}, matrix_fill(h));
        add_tensor(t, at + "indexer.k_norm.weight", DType::BF16, {p.index_dim}, norm_fill());
        add_tensor(t, at + "indexer.k_norm.bias", DType::BF16, {p.index_dim}, bias_fill());
        add_tensor(t, at + "indexer.weights_proj.weight", DType::BF16, {p.index_heads, h}, matrix_fill(h));
        add_tensor(t, base + "post_attention_layernorm.weight", DType::BF16, {h}, norm_fill());
        const std::string mlp = base + "mlp.";
        if (l < p.dense_layers) {
            add_tensor(t, mlp + "gate_proj.weight", DType::BF16, {p.intermediate, h}, matrix_fill(h));
            add_tensor(t, mlp + "up_proj.weight", DType::BF16, {p.intermediate, h}, matrix_fill(h));
            add_tensor(t, mlp + "down_proj.weight", DType::BF16, {h, p.intermediate}, matrix_fill(p.intermediate));
            continue;
        }
        add_tensor(t, mlp + "gate.weight", DType::BF16, {experts, h}, matrix_fill(h));
        add_tensor(t, mlp + "gate.e_score_correction_bias", DType::F32, {experts}, bias_fill());
        const int64_t shared = p.moe_intermediate * p.shared;
        add_tensor(t, mlp + "shared_experts.gate_proj.weight", DType::BF16, {shared, h}, matrix_fill(h));
        add_tensor(t, mlp + "shared_experts.up_proj.weight", DType::BF16, {shared, h}, matrix_fill(h));
        add_tensor(t, mlp + "shared_experts.down_proj.weight", DType::BF16, {h, shared}, matrix_fill(shared));
        for (int64_t x = 0; x < experts; ++x) {
            const std::string ex = mlp + "experts." + std::to_string(x) + ".";
            add_tensor(t, ex + "gate_proj.weight", DType::BF16, {p.moe_intermediate, h}, matrix_fill(h));
            add_tensor(t, ex + "up_proj.weight", DType::BF16, {p.moe_intermediate, h}, matrix_fill(h));
            add_tensor(t, ex + "down_proj.weight", DType::BF16, {h, p.moe_intermediate}, matrix_fill(p.moe_intermediate));
        }
    }
    add_tensor(t, "model.norm.weight", DType::BF16, {h}, norm_fill());
    add_tensor(t, "lm_head.weight", DType::BF16, {p.vocab, h}, matrix_fill(h));
    return t;
}

}  // namespace

std::vector<SynthPreset> GlmDsaFamily::synth_presets() const { return toolkit::synth_preset_list(glm_presets()); }

Expected<SynthCheckpoint> GlmDsaFamily::synth_checkpoint(const SynthRequest& request) const {
    STORMO_TRY_ASSIGN(const GlmPreset p, toolkit::requested_preset(glm_presets(), request, kName));
    return SynthCheckpoint{glm_config_json(p, request.layers), glm_generation_config_json(p),
                           glm_tensors(p, request.layers)};
}

}  // namespace stormo::glm_dsa
