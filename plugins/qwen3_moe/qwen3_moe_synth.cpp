// Synthetic Qwen3-MoE checkpoints (`stormo synth`): Qwen/Qwen3-30B-A3B and Qwen/Qwen3-235B-A22B
// (BF16, one tensor per expert), Qwen/Qwen3-30B-A3B-FP8 (block-scaled FP8 as the hub ships it),
// and toys of the same structures for tests.
#include "qwen3_moe_family.hpp"
#include "stormo/toolkit/synth.hpp"

namespace stormo::qwen3_moe {
namespace {

using toolkit::add_tensor;
using toolkit::matrix_fill;
using toolkit::norm_fill;

// The hyper-parameters of one Qwen3-MoE checkpoint, as its config.json states them.
struct Qwen3Preset {
    const char* name;
    const char* description;
    int64_t hidden = 0;
    int64_t intermediate = 0;      // dense MLP (no layer uses it: mlp_only_layers is empty)
    int64_t moe_intermediate = 0;  // each expert
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t head_dim = 0;
    int64_t experts = 0;
    int64_t top_k = 0;
    int64_t vocab = 0;
    int64_t bos = 0;
    std::vector<int64_t> eos;  // generation_config.json; config.json holds the first
    bool fp8 = false;          // the -FP8 checkpoint: attention and experts E4M3 in 128 x 128 blocks
};

const std::vector<Qwen3Preset>& qwen3_presets() {
    static const std::vector<Qwen3Preset> presets = {
        {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B shapes: 48 layers, 128 experts (top-8), hidden 2048, vocab 151936 (~61 GB)",
         2048, 6144, 768, 48, 32, 4, 128, 128, 8, 151936, 151643, {151645, 151643}},
        {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B shapes: 94 layers, 128 experts (top-8), hidden 4096, vocab 151936 (~470 GB)",
         4096, 12288, 1536, 94, 64, 4, 128, 128, 8, 151936, 151643, {151645, 151643}},
        {"qwen3-moe-tiny", "a Qwen3-MoE-structured toy for tests: 4 layers, 8 experts (top-2), hidden 256, vocab 1024 (~5 MB)",
         256, 512, 128, 4, 4, 2, 64, 8, 2, 1024, 1021, {1023, 1021}},
        {"qwen3-30b-a3b-fp8",
         "Qwen/Qwen3-30B-A3B-FP8 shapes: qwen3-30b-a3b with attention and experts in FP8 E4M3, 128 x 128 scale blocks "
         "(~31 GB)",
         2048, 6144, 768, 48, 32, 4, 128, 128, 8, 151936, 151643, {151645, 151643}, true},
        {"qwen3-moe-tiny-fp8", "qwen3-moe-tiny with attention and experts in FP8 E4M3, 128 x 128 scale blocks (~5 MB)",
         256, 512, 128, 4, 4, 2, 64, 8, 2, 1024, 1021, {1023, 1021}, true},
    };
    return presets;
}

// config.json as the hub writes Qwen3-MoE's (num_experts, top-level rope_theta, no rope scaling).
std::string qwen3_config_json(const Qwen3Preset& p, int64_t layers) {
    auto num = [](int64_t v) { return std::to_string(v); };
    std::string j = "{\n";
    j += "  \"architectures\": [\n    \"Qwen3MoeForCausalLM\"\n  ],\n";
    j += "  \"attention_bias\": false,\n";
    j += "  \"attention_dropout\": 0.0,\n";
    j += "  \"bos_token_id\": " + num(p.bos) + ",\n";
    j += "  \"decoder_sparse_step\": 1,\n";
    j += "  \"eos_token_id\": " + num(p.eos.front()) + ",\n";
    j += "  \"head_dim\": " + num(p.head_dim) + ",\n";
    j += "  \"hidden_act\": \"silu\",\n";
    j += "  \"hidden_size\": " + num(p.hidden) + ",\n";
    j += "  \"initializer_range\": 0.02,\n";
    j += "  \"intermediate_size\": " + num(p.intermediate) + ",\n";
    j += "  \"max_position_embeddings\": 40960,\n";
    j += "  \"max_window_layers\": " + num(layers) + ",\n";
    j += "  \"mlp_only_layers\": [],\n";
    j += "  \"model_type\": \"qwen3_moe\",\n";
    j += "  \"moe_intermediate_size\": " + num(p.moe_intermediate) + ",\n";
    j += "  \"norm_topk_prob\": true,\n";
    j += "  \"num_attention_heads\": " + num(p.heads) + ",\n";
    j += "  \"num_experts\": " + num(p.experts) + ",\n";
    j += "  \"num_experts_per_tok\": " + num(p.top_k) + ",\n";
    j += "  \"num_hidden_layers\": " + num(layers) + ",\n";
    j += "  \"num_key_value_heads\": " + num(p.kv_heads) + ",\n";
    j += "  \"output_router_logits\": false,\n";
    if (p.fp8) j += toolkit::fp8_quantization_config_json();
    j += "  \"rms_norm_eps\": 1e-06,\n";
    j += "  \"rope_scaling\": null,\n";
    j += "  \"rope_theta\": 1000000.0,\n";
    j += "  \"router_aux_loss_coef\": 0.001,\n";
    j += "  \"sliding_window\": null,\n";
    j += "  \"tie_word_embeddings\": false,\n";
    j += "  \"torch_dtype\": \"bfloat16\",\n";
    j += "  \"transformers_version\": \"4.51.0\",\n";
    j += "  \"use_cache\": true,\n";
    j += "  \"use_sliding_window\": false,\n";
    j += "  \"vocab_size\": " + num(p.vocab) + "\n";
    j += "}\n";
    return j;
}

std::string qwen3_generation_config_json(const Qwen3Preset& p) {
    return "{\n  \"bos_token_id\": " + std::to_string(p.bos) + ",\n  \"do_sample\": true,\n  \"eos_token_id\": " +
           toolkit::int_list(p.eos) + ",\n  \"pad_token_id\": " + std::to_string(p.bos) +
           ",\n  \"temperature\": 0.6,\n  \"top_k\": 20,\n  \"top_p\": 0.95,\n  \"transformers_version\": \"4.51.0\"\n}\n";
}

// Qwen3-MoE's state dict: no attention biases, QK-norm weights, the router as mlp.gate, and one
// gate/up/down matrix per expert, as the hub's files hold them (the -FP8 checkpoint quantizes the
// attention projections and the experts).
std::vector<SynthTensor> qwen3_tensors(const Qwen3Preset& p, int64_t layers) {
    const int64_t h = p.hidden, inter = p.moe_intermediate, e = p.experts;
    const int64_t q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim;
    std::vector<SynthTensor> t;
    auto linear = [&](const std::string& name, int64_t out, int64_t in, double gain = 1.0) {
        toolkit::add_linear(t, name, out, in, p.fp8, gain);
    };
    add_tensor(t, "model.embed_tokens.weight", DType::BF16, {p.vocab, h}, toolkit::embedding_fill());
    for (int64_t l = 0; l < layers; ++l) {
        const std::string base = "model.layers." + std::to_string(l) + ".";
        add_tensor(t, base + "input_layernorm.weight", DType::BF16, {h}, norm_fill());
        linear(base + "self_attn.q_proj.weight", q, h);
        linear(base + "self_attn.k_proj.weight", kv, h);
        linear(base + "self_attn.v_proj.weight", kv, h);
        linear(base + "self_attn.o_proj.weight", h, q, toolkit::kAttentionOutputGain);
        add_tensor(t, base + "self_attn.q_norm.weight", DType::BF16, {p.head_dim}, norm_fill());
        add_tensor(t, base + "self_attn.k_norm.weight", DType::BF16, {p.head_dim}, norm_fill());
        add_tensor(t, base + "post_attention_layernorm.weight", DType::BF16, {h}, norm_fill());
        add_tensor(t, base + "mlp.gate.weight", DType::BF16, {e, h}, matrix_fill(h));
        for (int64_t x = 0; x < e; ++x) {
            const std::string ex = base + "mlp.experts." + std::to_string(x) + ".";
            linear(ex + "gate_proj.weight", inter, h);
            linear(ex + "up_proj.weight", inter, h);
            linear(ex + "down_proj.weight", h, inter);
        }
    }
    add_tensor(t, "model.norm.weight", DType::BF16, {h}, norm_fill());
    add_tensor(t, "lm_head.weight", DType::BF16, {p.vocab, h}, matrix_fill(h));
    return t;
}

}  // namespace

std::vector<SynthPreset> Qwen3MoeFamily::synth_presets() const { return toolkit::synth_preset_list(qwen3_presets()); }

Expected<SynthCheckpoint> Qwen3MoeFamily::synth_checkpoint(const SynthRequest& request) const {
    STORMO_TRY_ASSIGN(const Qwen3Preset p, toolkit::requested_preset(qwen3_presets(), request, kName));
    return SynthCheckpoint{qwen3_config_json(p, request.layers), qwen3_generation_config_json(p),
                           qwen3_tensors(p, request.layers)};
}

}  // namespace stormo::qwen3_moe
