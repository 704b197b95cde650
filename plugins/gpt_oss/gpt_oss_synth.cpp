// Synthetic GPT-OSS checkpoints (`stormo synth`): the hub's config.json values and tensor layout
// (MXFP4 experts as U8 blocks [E, out, in/32, 16] and E8M0 scales [E, out, in/32], everything else
// BF16), at the preset's depth and expert count or a cut of them.
#include <algorithm>
#include <cmath>
#include <string_view>

#include "gpt_oss_family.hpp"
#include "stormo/toolkit/synth.hpp"

namespace stormo::gpt_oss {
namespace {

using toolkit::add_tensor;
using toolkit::bias_fill;
using toolkit::embedding_fill;
using toolkit::matrix_fill;
using toolkit::norm_fill;

// The hyper-parameters of one GPT-OSS checkpoint, as its config.json states them.
struct GptOssPreset {
    const char* name;
    const char* description;
    int64_t hidden = 0;
    int64_t intermediate = 0;
    int64_t layers = 0;
    int64_t heads = 0;
    int64_t kv_heads = 0;
    int64_t head_dim = 0;
    int64_t experts = 0;
    int64_t top_k = 0;
    int64_t vocab = 0;
    int64_t sliding_window = 0;
    int64_t bos = 0;
    int64_t pad = 0;
    std::vector<int64_t> eos;  // generation_config.json; config.json holds the first
};

// openai/gpt-oss-20b and openai/gpt-oss-120b differ only in depth and expert count; the tiny
// preset keeps their structure (MXFP4 experts, sliding/full alternation, sinks, biases) at a size a
// unit test writes in milliseconds.
const std::vector<GptOssPreset>& gpt_oss_presets() {
    static const std::vector<GptOssPreset> presets = {
        {"gpt-oss-20b", "openai/gpt-oss-20b shapes: 24 layers, 32 experts (top-4), hidden 2880, vocab 201088 (~13.8 GB)",
         2880, 2880, 24, 64, 8, 64, 32, 4, 201088, 128, 199998, 199999, {200002, 199999, 200012}},
        {"gpt-oss-120b", "openai/gpt-oss-120b shapes: 36 layers, 128 experts (top-4), hidden 2880, vocab 201088 (~65 GB)",
         2880, 2880, 36, 64, 8, 64, 128, 4, 201088, 128, 199998, 199999, {200002, 199999, 200012}},
        {"gpt-oss-tiny", "a GPT-OSS-structured toy for tests: 4 layers, 8 experts (top-2), hidden 256, vocab 1024 (~6 MB)",
         256, 256, 4, 4, 2, 64, 8, 2, 1024, 32, 1021, 1022, {1023}},
    };
    return presets;
}

std::string layer_type(int64_t l) { return l % 2 == 0 ? "sliding_attention" : "full_attention"; }

// config.json with the hub's keys and values (rope_theta at the top level, YaRN in rope_scaling,
// MXFP4 quantization_config), num_hidden_layers and layer_types following `layers`.
std::string gpt_oss_config_json(const GptOssPreset& p, int64_t layers) {
    std::string types;
    for (int64_t l = 0; l < layers; ++l) types += std::string(l ? ",\n" : "\n") + "    \"" + layer_type(l) + "\"";
    auto num = [](int64_t v) { return std::to_string(v); };
    std::string j = "{\n";
    j += "  \"architectures\": [\n    \"GptOssForCausalLM\"\n  ],\n";
    j += "  \"attention_bias\": true,\n";
    j += "  \"attention_dropout\": 0.0,\n";
    j += "  \"eos_token_id\": " + num(p.eos.front()) + ",\n";
    j += "  \"experts_per_token\": " + num(p.top_k) + ",\n";
    j += "  \"head_dim\": " + num(p.head_dim) + ",\n";
    j += "  \"hidden_act\": \"silu\",\n";
    j += "  \"hidden_size\": " + num(p.hidden) + ",\n";
    j += "  \"initial_context_length\": 4096,\n";
    j += "  \"initializer_range\": 0.02,\n";
    j += "  \"intermediate_size\": " + num(p.intermediate) + ",\n";
    j += "  \"layer_types\": [" + types + "\n  ],\n";
    j += "  \"max_position_embeddings\": 131072,\n";
    j += "  \"model_type\": \"gpt_oss\",\n";
    j += "  \"num_attention_heads\": " + num(p.heads) + ",\n";
    j += "  \"num_experts_per_tok\": " + num(p.top_k) + ",\n";
    j += "  \"num_hidden_layers\": " + num(layers) + ",\n";
    j += "  \"num_key_value_heads\": " + num(p.kv_heads) + ",\n";
    j += "  \"num_local_experts\": " + num(p.experts) + ",\n";
    j += "  \"output_router_logits\": false,\n";
    j += "  \"pad_token_id\": " + num(p.pad) + ",\n";
    j += "  \"quantization_config\": {\n";
    j += "    \"modules_to_not_convert\": [\n";
    j += "      \"model.layers.*.self_attn\",\n      \"model.layers.*.mlp.router\",\n";
    j += "      \"model.embed_tokens\",\n      \"lm_head\"\n    ],\n";
    j += "    \"quant_method\": \"mxfp4\"\n  },\n";
    j += "  \"rms_norm_eps\": 1e-05,\n";
    j += "  \"rope_scaling\": {\n";
    j += "    \"beta_fast\": 32.0,\n    \"beta_slow\": 1.0,\n    \"factor\": 32.0,\n";
    j += "    \"original_max_position_embeddings\": 4096,\n    \"rope_type\": \"yarn\",\n    \"truncate\": false\n  },\n";
    j += "  \"rope_theta\": 150000,\n";
    j += "  \"router_aux_loss_coef\": 0.9,\n";
    j += "  \"sliding_window\": " + num(p.sliding_window) + ",\n";
    j += "  \"swiglu_limit\": 7.0,\n";
    j += "  \"tie_word_embeddings\": false,\n";
    j += "  \"torch_dtype\": \"bfloat16\",\n";
    j += "  \"transformers_version\": \"4.55.0.dev0\",\n";
    j += "  \"use_cache\": true,\n";
    j += "  \"vocab_size\": " + num(p.vocab) + "\n";
    j += "}\n";
    return j;
}

std::string gpt_oss_generation_config_json(const GptOssPreset& p) {
    return "{\n  \"bos_token_id\": " + std::to_string(p.bos) + ",\n  \"do_sample\": true,\n  \"eos_token_id\": " +
           toolkit::int_list(p.eos) + ",\n  \"pad_token_id\": " + std::to_string(p.pad) +
           ",\n  \"transformers_version\": \"4.55.0.dev0\"\n}\n";
}

SynthFillSpec sinks_fill() { return {SynthFill::uniform, 0.0f, 0.5f, 0, 0}; }
SynthFillSpec blocks_fill() { return {SynthFill::random_bytes, 0.0f, 0.0f, 0, 0}; }

// E8M0 scales (2^(byte - 127)) for uniform E2M1 codes: the codes' RMS is sqrt(68.5 / 8) ~ 2.93 and
// three consecutive exponents add a factor ~1.32, so the centre exponent is chosen for a weight
// RMS of 1 / sqrt(fan_in), the same output scale as the BF16 matrices (bytes 118..120 at 2880).
SynthFillSpec scales_fill(int64_t fan_in) {
    const double target = 1.0 / std::sqrt(static_cast<double>(fan_in)) / (std::sqrt(68.5 / 8.0) * 1.32);
    const int centre = 127 + static_cast<int>(std::lround(std::log2(target)));
    const int c = std::clamp(centre, 2, 252);
    return {SynthFill::byte_range, 0.0f, 0.0f, static_cast<uint8_t>(c - 1), static_cast<uint8_t>(c + 1)};
}

std::vector<SynthTensor> gpt_oss_tensors(const GptOssPreset& p, int64_t layers) {
    constexpr int64_t kBlock = 32, kBlockBytes = 16;  // MXFP4: 32 values, 16 bytes, one scale
    const int64_t h = p.hidden, inter = p.intermediate, e = p.experts;
    const int64_t q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim;
    std::vector<SynthTensor> t;
    add_tensor(t, "model.embed_tokens.weight", DType::BF16, {p.vocab, h}, embedding_fill());
    for (int64_t l = 0; l < layers; ++l) {
        const std::string base = "model.layers." + std::to_string(l) + ".";
        add_tensor(t, base + "input_layernorm.weight", DType::BF16, {h}, norm_fill());
        struct Projection {
            const char* name;
            int64_t out, in;
        };
        for (const Projection& pr : {Projection{"q_proj", q, h}, Projection{"k_proj", kv, h}, Projection{"v_proj", kv, h},
                                     Projection{"o_proj", h, q}}) {
            const double gain = std::string_view(pr.name) == "o_proj" ? toolkit::kAttentionOutputGain : 1.0;
            add_tensor(t, base + "self_attn." + pr.name + ".weight", DType::BF16, {pr.out, pr.in}, matrix_fill(pr.in, gain));
            add_tensor(t, base + "self_attn." + pr.name + ".bias", DType::BF16, {pr.out}, bias_fill());
        }
        add_tensor(t, base + "self_attn.sinks", DType::BF16, {p.heads}, sinks_fill());
        add_tensor(t, base + "post_attention_layernorm.weight", DType::BF16, {h}, norm_fill());
        add_tensor(t, base + "mlp.router.weight", DType::BF16, {e, h}, matrix_fill(h));
        add_tensor(t, base + "mlp.router.bias", DType::BF16, {e}, bias_fill());
        const std::string ex = base + "mlp.experts.";
        add_tensor(t, ex + "gate_up_proj_blocks", DType::U8, {e, 2 * inter, h / kBlock, kBlockBytes}, blocks_fill());
        add_tensor(t, ex + "gate_up_proj_scales", DType::U8, {e, 2 * inter, h / kBlock}, scales_fill(h));
        add_tensor(t, ex + "gate_up_proj_bias", DType::BF16, {e, 2 * inter}, bias_fill());
        add_tensor(t, ex + "down_proj_blocks", DType::U8, {e, h, inter / kBlock, kBlockBytes}, blocks_fill());
        add_tensor(t, ex + "down_proj_scales", DType::U8, {e, h, inter / kBlock}, scales_fill(inter));
        add_tensor(t, ex + "down_proj_bias", DType::BF16, {e, h}, bias_fill());
    }
    add_tensor(t, "model.norm.weight", DType::BF16, {h}, norm_fill());
    add_tensor(t, "lm_head.weight", DType::BF16, {p.vocab, h}, matrix_fill(h));
    return t;
}

}  // namespace

std::vector<SynthPreset> GptOssFamily::synth_presets() const { return toolkit::synth_preset_list(gpt_oss_presets()); }

Expected<SynthCheckpoint> GptOssFamily::synth_checkpoint(const SynthRequest& request) const {
    STORMO_TRY_ASSIGN(const GptOssPreset p, toolkit::requested_preset(gpt_oss_presets(), request, "gpt_oss"));
    return SynthCheckpoint{gpt_oss_config_json(p, request.layers), gpt_oss_generation_config_json(p),
                           gpt_oss_tensors(p, request.layers)};
}

}  // namespace stormo::gpt_oss
