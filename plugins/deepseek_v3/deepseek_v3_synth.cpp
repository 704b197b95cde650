// Synthetic DeepSeek-V3 checkpoints (`stormo synth`): deepseek-ai/DeepSeek-V3's (and R1's) and
// moonshotai/Kimi-K2-Instruct's config.json and state dict as the hub ships them (block-scaled
// FP8, DeepSeek's multi-token-prediction layer), and toys of the same structures for tests.
#include <algorithm>

#include "deepseek_v3_family.hpp"
#include "stormo/toolkit/synth.hpp"

namespace stormo::deepseek_v3 {
namespace {

using toolkit::add_tensor;
using toolkit::bias_fill;
using toolkit::matrix_fill;
using toolkit::norm_fill;

// How a hub repository writes its config.json: DeepSeek's keys sorted, integral numbers bare
// ("rope_theta": 10000, "factor": 40) and an ep_size; Moonshot's Kimi-K2 without ep_size, floats
// written as floats, rope_theta and routed_scaling_factor ahead of rope_scaling. The numbers are
// kept as the hub's text so the synthetic file reads as the real one does.
enum class Dialect : uint8_t { deepseek, moonshot };

// The hyper-parameters of one DeepseekV3ForCausalLM checkpoint, as its config.json states them.
struct DeepseekPreset {
    const char* name;
    const char* description;
    Dialect dialect = Dialect::deepseek;
    const char* model_type = "deepseek_v3";
    int64_t hidden = 0, intermediate = 0, moe_intermediate = 0, layers = 0, dense_layers = 0, heads = 0;
    int64_t q_lora_rank = 0, kv_lora_rank = 0, nope = 0, rope = 0, v = 0;
    int64_t experts = 0, top_k = 0, shared = 0, n_group = 0, topk_group = 0;
    int64_t mtp_layers = 0;  // num_nextn_predict_layers: model.layers.<num_hidden_layers + i>.*
    int64_t vocab = 0, bos = 0, eos = 0, max_positions = 0;
    const char* routed_scaling;                         // "2.5"
    const char* rope_theta;                             // "10000"
    const char* yarn_factor;                            // "40"
    const char* beta_fast;                              // "32"
    const char* beta_slow;                              // "1"
    const char* transformers_version;
};

// DeepSeek-V3's numbers from the hub's config.json (R1 and V3-0324 share them); Kimi-K2-Instruct's
// from its own. Both ship FP8 E4M3 in 128 x 128 blocks with an F32 weight_scale_inv per block.
const std::vector<DeepseekPreset>& deepseek_presets() {
    static const std::vector<DeepseekPreset> presets = {
        {"deepseek-v3",
         "deepseek-ai/DeepSeek-V3 (and R1) shapes: 61 layers (3 dense) + 1 MTP layer, 256 experts (top-8 in 4 of 8 "
         "groups) + 1 shared, hidden 7168, MLA, FP8 128 x 128 blocks (~689 GB: cut it with --layers / --experts)",
         Dialect::deepseek, "deepseek_v3", 7168, 18432, 2048, 61, 3, 128, 1536, 512, 128, 64, 128, 256, 8, 1, 8, 4, 1,
         129280, 0, 1, 163840, "2.5", "10000", "40", "32", "1", "4.33.1"},
        {"kimi-k2",
         "moonshotai/Kimi-K2-Instruct shapes: 61 layers (1 dense), 384 experts (top-8) + 1 shared, hidden 7168, "
         "64 heads of MLA, FP8 128 x 128 blocks (~1.03 TB: cut it with --layers / --experts)",
         Dialect::moonshot, "kimi_k2", 7168, 18432, 2048, 61, 1, 64, 1536, 512, 128, 64, 128, 384, 8, 1, 1, 1, 0,
         163840, 163584, 163585, 131072, "2.827", "50000.0", "32.0", "1.0", "1.0", "4.48.3"},
        {"deepseek-v3-tiny",
         "a DeepSeek-V3-structured toy for tests: 4 layers (1 dense) + 1 MTP layer, 16 experts (top-4 in 2 of 4 "
         "groups), hidden 256, FP8 (~10 MB)",
         Dialect::deepseek, "deepseek_v3", 256, 512, 128, 4, 1, 4, 64, 32, 32, 16, 32, 16, 4, 1, 4, 2, 1, 1024, 0, 1,
         4096, "2.5", "10000", "40", "32", "1", "4.33.1"},
        {"kimi-k2-tiny",
         "a Kimi-K2-structured toy for tests: 4 layers (1 dense), 12 experts (top-4, one group), hidden 256, FP8 (~6 MB)",
         Dialect::moonshot, "kimi_k2", 256, 512, 128, 4, 1, 4, 64, 32, 32, 16, 32, 12, 4, 1, 1, 1, 0, 1024, 1022, 1023,
         4096, "2.827", "50000.0", "32.0", "1.0", "1.0", "4.48.3"},
    };
    return presets;
}

// config.json as the hub writes it: rope_theta with rope_scaling {"type": "yarn", ...} at the top
// level and the block-scaled FP8 quantization_config (the dialect transformers 5 replaces with
// rope_parameters; the family reads both).
std::string deepseek_config_json(const DeepseekPreset& p, int64_t layers) {
    auto num = [](int64_t v) { return std::to_string(v); };
    const bool moonshot = p.dialect == Dialect::moonshot;
    const std::string rope_scaling = std::string("  \"rope_scaling\": {\n    \"beta_fast\": ") + p.beta_fast +
                                     ",\n    \"beta_slow\": " + p.beta_slow + ",\n    \"factor\": " + p.yarn_factor +
                                     ",\n    \"mscale\": 1.0,\n    \"mscale_all_dim\": 1.0,\n"
                                     "    \"original_max_position_embeddings\": 4096,\n    \"type\": \"yarn\"\n  },\n";
    const std::string rope_theta = std::string("  \"rope_theta\": ") + p.rope_theta + ",\n";
    const std::string scaling = std::string("  \"routed_scaling_factor\": ") + p.routed_scaling + ",\n";
    std::string j = "{\n";
    j += "  \"architectures\": [\n    \"DeepseekV3ForCausalLM\"\n  ],\n";
    j += "  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n";
    j += "  \"auto_map\": {\n    \"AutoConfig\": \"configuration_deepseek.DeepseekV3Config\",\n"
         "    \"AutoModel\": \"modeling_deepseek.DeepseekV3Model\",\n"
         "    \"AutoModelForCausalLM\": \"modeling_deepseek.DeepseekV3ForCausalLM\"\n  },\n";
    j += "  \"aux_loss_alpha\": 0.001,\n";
    j += "  \"bos_token_id\": " + num(p.bos) + ",\n  \"eos_token_id\": " + num(p.eos) + ",\n";
    if (!moonshot) j += "  \"ep_size\": 1,\n";
    j += "  \"first_k_dense_replace\": " + num(p.dense_layers) + ",\n";
    j += "  \"hidden_act\": \"silu\",\n  \"hidden_size\": " + num(p.hidden) + ",\n";
    j += "  \"initializer_range\": 0.02,\n  \"intermediate_size\": " + num(p.intermediate) + ",\n";
    j += "  \"kv_lora_rank\": " + num(p.kv_lora_rank) + ",\n";
    j += "  \"max_position_embeddings\": " + num(p.max_positions) + ",\n";
    j += std::string("  \"model_type\": \"") + p.model_type + "\",\n";
    j += "  \"moe_intermediate_size\": " + num(p.moe_intermediate) + ",\n  \"moe_layer_freq\": 1,\n";
    j += "  \"n_group\": " + num(p.n_group) + ",\n  \"n_routed_experts\": " + num(p.experts) + ",\n";
    j += "  \"n_shared_experts\": " + num(p.shared) + ",\n  \"norm_topk_prob\": true,\n";
    j += "  \"num_attention_heads\": " + num(p.heads) + ",\n  \"num_experts_per_tok\": " + num(p.top_k) + ",\n";
    j += "  \"num_hidden_layers\": " + num(layers) + ",\n  \"num_key_value_heads\": " + num(p.heads) + ",\n";
    j += "  \"num_nextn_predict_layers\": " + num(p.mtp_layers) + ",\n  \"pretraining_tp\": 1,\n";
    j += "  \"q_lora_rank\": " + num(p.q_lora_rank) + ",\n";
    j += "  \"qk_nope_head_dim\": " + num(p.nope) + ",\n  \"qk_rope_head_dim\": " + num(p.rope) + ",\n";
    j += toolkit::fp8_quantization_config_json();
    j += "  \"rms_norm_eps\": 1e-06,\n";
    j += moonshot ? rope_theta + scaling + rope_scaling : rope_scaling + rope_theta + scaling;
    j += "  \"scoring_func\": \"sigmoid\",\n  \"seq_aux\": true,\n  \"tie_word_embeddings\": false,\n";
    j += "  \"topk_group\": " + num(p.topk_group) + ",\n  \"topk_method\": \"noaux_tc\",\n";
    j += std::string("  \"torch_dtype\": \"bfloat16\",\n  \"transformers_version\": \"") + p.transformers_version + "\",\n";
    j += "  \"use_cache\": true,\n  \"v_head_dim\": " + num(p.v) + ",\n";
    j += "  \"vocab_size\": " + num(p.vocab) + "\n}\n";
    return j;
}

// config.json's bos and eos (the hub's generation_config.json also sets sampling defaults the
// engine does not read).
std::string deepseek_generation_config_json(const DeepseekPreset& p) {
    return "{\n  \"bos_token_id\": " + std::to_string(p.bos) + ",\n  \"eos_token_id\": " + std::to_string(p.eos) + "\n}\n";
}

// A linear layer as the hub's FP8 checkpoints hold it: E4M3 codes with an F32 weight_scale_inv
// per 128 x 128 block.
void add_fp8_linear(std::vector<SynthTensor>& t, const std::string& name, int64_t rows, int64_t cols, double gain = 1.0) {
    toolkit::add_linear(t, name, rows, cols, true, gain, DType::F32);
}

// One decoder layer: MLA with the query's low-rank path, then a dense MLP for the first
// first_k_dense_replace layers, else the router (BF16 weight, F32 correction bias), the shared
// experts and one gate/up/down per routed expert. The norms, router and embeddings stay BF16 as
// on the hub; every projection is FP8. The F32 correction bias takes the uniform stream: +-0.02
// BF16 draws with random low mantissa bits, small values around 0 as a trained bias is.
void add_decoder_layer(std::vector<SynthTensor>& t, const DeepseekPreset& p, int64_t l) {
    const int64_t h = p.hidden, qkd = p.nope + p.rope;
    const std::string base = "model.layers." + std::to_string(l) + ".";
    const std::string at = base + "self_attn.";
    add_tensor(t, base + "input_layernorm.weight", DType::BF16, {h}, norm_fill());
    add_fp8_linear(t, at + "q_a_proj.weight", p.q_lora_rank, h);
    add_tensor(t, at + "q_a_layernorm.weight", DType::BF16, {p.q_lora_rank}, norm_fill());
    add_fp8_linear(t, at + "q_b_proj.weight", p.heads * qkd, p.q_lora_rank);
    add_fp8_linear(t, at + "kv_a_proj_with_mqa.weight", p.kv_lora_rank + p.rope, h);
    add_tensor(t, at + "kv_a_layernorm.weight", DType::BF16, {p.kv_lora_rank}, norm_fill());
    add_fp8_linear(t, at + "kv_b_proj.weight", p.heads * (p.nope + p.v), p.kv_lora_rank);
    add_fp8_linear(t, at + "o_proj.weight", h, p.heads * p.v, toolkit::kAttentionOutputGain);
    add_tensor(t, base + "post_attention_layernorm.weight", DType::BF16, {h}, norm_fill());
    const std::string mlp = base + "mlp.";
    if (l < p.dense_layers) {
        add_fp8_linear(t, mlp + "gate_proj.weight", p.intermediate, h);
        add_fp8_linear(t, mlp + "up_proj.weight", p.intermediate, h);
        add_fp8_linear(t, mlp + "down_proj.weight", h, p.intermediate);
        return;
    }
    add_tensor(t, mlp + "gate.weight", DType::BF16, {p.experts, h}, matrix_fill(h));
    add_tensor(t, mlp + "gate.e_score_correction_bias", DType::F32, {p.experts}, bias_fill());
    const int64_t shared = p.moe_intermediate * p.shared;
    add_fp8_linear(t, mlp + "shared_experts.gate_proj.weight", shared, h);
    add_fp8_linear(t, mlp + "shared_experts.up_proj.weight", shared, h);
    add_fp8_linear(t, mlp + "shared_experts.down_proj.weight", h, shared);
    for (int64_t x = 0; x < p.experts; ++x) {
        const std::string ex = mlp + "experts." + std::to_string(x) + ".";
        add_fp8_linear(t, ex + "gate_proj.weight", p.moe_intermediate, h);
        add_fp8_linear(t, ex + "up_proj.weight", p.moe_intermediate, h);
        add_fp8_linear(t, ex + "down_proj.weight", h, p.moe_intermediate);
    }
}

// DeepSeek's multi-token-prediction layer, after the model's last layer as on the hub
// (model.layers.61.* of DeepSeek-V3): its own embedding, the norms of the embedding and of the
// previous hidden state, their BF16 projection from 2 x hidden, a full decoder layer, and its own
// final norm and head.
void add_mtp_layer(std::vector<SynthTensor>& t, const DeepseekPreset& p, int64_t l) {
    const int64_t h = p.hidden;
    const std::string base = "model.layers." + std::to_string(l) + ".";
    add_tensor(t, base + "embed_tokens.weight", DType::BF16, {p.vocab, h}, toolkit::embedding_fill());
    add_tensor(t, base + "enorm.weight", DType::BF16, {h}, norm_fill());
    add_tensor(t, base + "hnorm.weight", DType::BF16, {h}, norm_fill());
    add_tensor(t, base + "eh_proj.weight", DType::BF16, {h, 2 * h}, matrix_fill(2 * h));
    add_decoder_layer(t, p, l);
    add_tensor(t, base + "shared_head.norm.weight", DType::BF16, {h}, norm_fill());
    add_tensor(t, base + "shared_head.head.weight", DType::BF16, {p.vocab, h}, matrix_fill(h));
}

// The state dict in the hub's file order: embedding, the layers, the final norm and head, then
// the MTP layers (the last shard of DeepSeek-V3 holds model.layers.61).
std::vector<SynthTensor> deepseek_tensors(const DeepseekPreset& p, int64_t layers) {
    std::vector<SynthTensor> t;
    add_tensor(t, "model.embed_tokens.weight", DType::BF16, {p.vocab, p.hidden}, toolkit::embedding_fill());
    for (int64_t l = 0; l < layers; ++l) add_decoder_layer(t, p, l);
    add_tensor(t, "model.norm.weight", DType::BF16, {p.hidden}, norm_fill());
    add_tensor(t, "lm_head.weight", DType::BF16, {p.vocab, p.hidden}, matrix_fill(p.hidden));
    for (int64_t m = 0; m < p.mtp_layers; ++m) add_mtp_layer(t, p, layers + m);
    return t;
}

// The group-limited router needs every group to hold at least two experts (a group's score is the
// sum of its top 2) and its topk_group chosen groups to hold the experts per token, as
// transformers' DeepseekV3TopkRouter does: a cut keeps n_group and so must be a multiple of it.
Expected<void> check_expert_groups(const DeepseekPreset& p) {
    const int64_t per_group = std::max<int64_t>(2, (p.top_k + p.topk_group - 1) / p.topk_group);
    if (p.experts % p.n_group == 0 && p.experts / p.n_group >= per_group) return {};
    return fail(ErrorKind::invalid_argument,
                std::string(kName) + ": --experts " + std::to_string(p.experts) + " of " + p.name +
                    " does not split into its " + std::to_string(p.n_group) + " expert groups (n_group) of at least " +
                    std::to_string(per_group) + ": take a multiple of " + std::to_string(p.n_group) + " from " +
                    std::to_string(per_group * p.n_group));
}

}  // namespace

std::vector<SynthPreset> DeepseekV3Family::synth_presets() const { return toolkit::synth_preset_list(deepseek_presets()); }

Expected<SynthCheckpoint> DeepseekV3Family::synth_checkpoint(const SynthRequest& request) const {
    STORMO_TRY_ASSIGN(DeepseekPreset p, toolkit::requested_preset(deepseek_presets(), request, kName));
    STORMO_TRY(check_expert_groups(p));
    // A cut shallower than the dense layers is all dense; the MTP layer after it is then MoE, as
    // the config's first_k_dense_replace says.
    p.dense_layers = std::min<int64_t>(p.dense_layers, request.layers);
    return SynthCheckpoint{deepseek_config_json(p, request.layers), deepseek_generation_config_json(p),
                           deepseek_tensors(p, request.layers)};
}

}  // namespace stormo::deepseek_v3
