// Synthetic GPT-OSS checkpoints: the hub's config.json values and tensor layout (MXFP4 experts as
// U8 blocks [E, out, in/32, 16] and E8M0 scales [E, out, in/32], everything else BF16), with
// counter-based random values so any byte range of a tensor can be generated on its own.
#include "tools/synth.hpp"
#include "tools/fp8_codes.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "util/file.hpp"

namespace stormo::synth {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---- presets --------------------------------------------------------------------------------

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

const GptOssPreset* find_preset(const std::string& name) {
    for (const GptOssPreset& p : gpt_oss_presets())
        if (name == p.name) return &p;
    return nullptr;
}

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

// Qwen/Qwen3-30B-A3B and Qwen/Qwen3-235B-A22B (BF16, one tensor per expert), Qwen/Qwen3-30B-A3B-FP8
// (block-scaled FP8 as the hub ships it), and toys of the same structures for tests.
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

const Qwen3Preset* find_qwen3_preset(const std::string& name) {
    for (const Qwen3Preset& p : qwen3_presets())
        if (name == p.name) return &p;
    return nullptr;
}

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

const GlmPreset* find_glm_preset(const std::string& name) {
    for (const GlmPreset& p : glm_presets())
        if (name == p.name) return &p;
    return nullptr;
}

std::string layer_type(int64_t l) { return l % 2 == 0 ? "sliding_attention" : "full_attention"; }

std::string int_list(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(v[i]);
    }
    return s + "]";
}

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
           int_list(p.eos) + ",\n  \"pad_token_id\": " + std::to_string(p.pad) +
           ",\n  \"transformers_version\": \"4.55.0.dev0\"\n}\n";
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
    if (p.fp8)
        j += "  \"quantization_config\": {\n    \"activation_scheme\": \"dynamic\",\n    \"fmt\": \"e4m3\",\n"
             "    \"quant_method\": \"fp8\",\n    \"weight_block_size\": [\n      " + num(tools::kFp8CheckpointBlock) + ",\n      " +
             num(tools::kFp8CheckpointBlock) + "\n    ]\n  },\n";
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
           int_list(p.eos) + ",\n  \"pad_token_id\": " + std::to_string(p.bos) +
           ",\n  \"temperature\": 0.6,\n  \"top_k\": 20,\n  \"top_p\": 0.95,\n  \"transformers_version\": \"4.51.0\"\n}\n";
}

// config.json as zai-org writes GLM-5's (first_k_dense_replace, n_routed_experts, rope_parameters).
std::string glm_config_json(const GlmPreset& p, int64_t layers, int64_t experts) {
    auto num = [](int64_t v) { return std::to_string(v); };
    std::string j = "{\n";
    j += "  \"architectures\": [\n    \"GlmMoeDsaForCausalLM\"\n  ],\n";
    j += "  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n";
    j += "  \"eos_token_id\": " + int_list(p.eos) + ",\n";
    j += "  \"first_k_dense_replace\": " + num(std::min(p.dense_layers, layers)) + ",\n";
    j += "  \"hidden_act\": \"silu\",\n  \"hidden_size\": " + num(p.hidden) + ",\n";
    j += "  \"index_head_dim\": " + num(p.index_dim) + ",\n  \"index_n_heads\": " + num(p.index_heads) + ",\n";
    j += "  \"index_topk\": " + num(p.index_topk) + ",\n  \"intermediate_size\": " + num(p.intermediate) + ",\n";
    j += "  \"kv_lora_rank\": " + num(p.kv_lora_rank) + ",\n  \"max_position_embeddings\": 202752,\n";
    j += "  \"model_type\": \"glm_moe_dsa\",\n  \"moe_intermediate_size\": " + num(p.moe_intermediate) + ",\n";
    j += "  \"n_group\": 1,\n  \"n_routed_experts\": " + num(experts) + ",\n";
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
    return "{\n  \"eos_token_id\": " + int_list(p.eos) + ",\n  \"pad_token_id\": " + std::to_string(p.pad) + "\n}\n";
}

// ---- value ranges ---------------------------------------------------------------------------

// Dense matrices: uniform +-sqrt(3 / fan_in), so a unit-variance input gives unit-variance
// outputs; norms around 1; biases and sinks small. Every layer's output then stays of unit order
// and the logits of the random model are finite and spread over a few units.
FillSpec matrix_fill(int64_t fan_in, double gain = 1.0) {
    return {Fill::uniform, 0.0f, static_cast<float>(gain * std::sqrt(3.0 / static_cast<double>(fan_in))), 0, 0};
}

// Random attention averages the values of the context, so at full gain every layer adds nearly
// the same vector to every position: by layer 24 of gpt-oss-20b that shared part dominated the
// residual and the routers sent most tokens to the same few experts (the top 8 of 32 took 80-90%
// of the choices), which would flatter every expert cache. At a quarter gain on o_proj the
// positions stay distinct and routing stays balanced at every depth (top 8 of 32: ~40% over 64
// random tokens, near what uniform choices give), as a trained router with load balancing aims for.
constexpr double kAttentionOutputGain = 0.25;
FillSpec norm_fill() { return {Fill::uniform, 1.0f, 0.1f, 0, 0}; }
FillSpec bias_fill() { return {Fill::uniform, 0.0f, 0.02f, 0, 0}; }
FillSpec sinks_fill() { return {Fill::uniform, 0.0f, 0.5f, 0, 0}; }
FillSpec embedding_fill() { return {Fill::uniform, 0.0f, 1.0f, 0, 0}; }
FillSpec blocks_fill() { return {Fill::random_bytes, 0.0f, 0.0f, 0, 0}; }

// E8M0 scales (2^(byte - 127)) for uniform E2M1 codes: the codes' RMS is sqrt(68.5 / 8) ~ 2.93 and
// three consecutive exponents add a factor ~1.32, so the centre exponent is chosen for a weight
// RMS of 1 / sqrt(fan_in), the same output scale as the BF16 matrices (bytes 118..120 at 2880).
FillSpec scales_fill(int64_t fan_in) {
    const double target = 1.0 / std::sqrt(static_cast<double>(fan_in)) / (std::sqrt(68.5 / 8.0) * 1.32);
    const int centre = 127 + static_cast<int>(std::lround(std::log2(target)));
    const int c = std::clamp(centre, 2, 252);
    return {Fill::byte_range, 0.0f, 0.0f, static_cast<uint8_t>(c - 1), static_cast<uint8_t>(c + 1)};
}

// FP8 E4M3 codes as a checkpoint holds them (normal weights scaled to a block's amax and rounded,
// tools/fp8_codes.hpp); the block scales (BF16 weight_scale_inv, +-10% around their centre) give
// the weights an RMS of gain / sqrt(fan_in), as matrix_fill does.
FillSpec e4m3_fill() { return {Fill::e4m3_codes, 0.0f, 0.0f, 0, 0}; }
FillSpec fp8_scale_fill(int64_t fan_in, double gain) {
    const double codes_rms = tools::e4m3_gaussian_codes().rms;
    const auto centre = static_cast<float>(gain / std::sqrt(static_cast<double>(fan_in)) / codes_rms);
    return {Fill::uniform, centre, 0.1f * centre, 0, 0};
}

// ---- tensors and shards -----------------------------------------------------------------------

uint64_t bytes_of(DType dtype, const Shape& shape) {
    return static_cast<uint64_t>(element_count(shape)) * dtype_size(dtype);
}

void add(std::vector<PlannedTensor>& out, std::string name, DType dtype, Shape shape, FillSpec fill) {
    const uint64_t n = bytes_of(dtype, shape);
    out.push_back({std::move(name), dtype, std::move(shape), n, fill});
}

std::vector<PlannedTensor> gpt_oss_tensors(const GptOssPreset& p, int64_t layers) {
    constexpr int64_t kBlock = 32, kBlockBytes = 16;  // MXFP4: 32 values, 16 bytes, one scale
    const int64_t h = p.hidden, inter = p.intermediate, e = p.experts;
    const int64_t q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim;
    std::vector<PlannedTensor> t;
    add(t, "model.embed_tokens.weight", DType::BF16, {p.vocab, h}, embedding_fill());
    for (int64_t l = 0; l < layers; ++l) {
        const std::string base = "model.layers." + std::to_string(l) + ".";
        add(t, base + "input_layernorm.weight", DType::BF16, {h}, norm_fill());
        struct Projection {
            const char* name;
            int64_t out, in;
        };
        for (const Projection& pr : {Projection{"q_proj", q, h}, Projection{"k_proj", kv, h}, Projection{"v_proj", kv, h},
                                     Projection{"o_proj", h, q}}) {
            const double gain = std::string_view(pr.name) == "o_proj" ? kAttentionOutputGain : 1.0;
            add(t, base + "self_attn." + pr.name + ".weight", DType::BF16, {pr.out, pr.in}, matrix_fill(pr.in, gain));
            add(t, base + "self_attn." + pr.name + ".bias", DType::BF16, {pr.out}, bias_fill());
        }
        add(t, base + "self_attn.sinks", DType::BF16, {p.heads}, sinks_fill());
        add(t, base + "post_attention_layernorm.weight", DType::BF16, {h}, norm_fill());
        add(t, base + "mlp.router.weight", DType::BF16, {e, h}, matrix_fill(h));
        add(t, base + "mlp.router.bias", DType::BF16, {e}, bias_fill());
        const std::string ex = base + "mlp.experts.";
        add(t, ex + "gate_up_proj_blocks", DType::U8, {e, 2 * inter, h / kBlock, kBlockBytes}, blocks_fill());
        add(t, ex + "gate_up_proj_scales", DType::U8, {e, 2 * inter, h / kBlock}, scales_fill(h));
        add(t, ex + "gate_up_proj_bias", DType::BF16, {e, 2 * inter}, bias_fill());
        add(t, ex + "down_proj_blocks", DType::U8, {e, h, inter / kBlock, kBlockBytes}, blocks_fill());
        add(t, ex + "down_proj_scales", DType::U8, {e, h, inter / kBlock}, scales_fill(inter));
        add(t, ex + "down_proj_bias", DType::BF16, {e, h}, bias_fill());
    }
    add(t, "model.norm.weight", DType::BF16, {h}, norm_fill());
    add(t, "lm_head.weight", DType::BF16, {p.vocab, h}, matrix_fill(h));
    return t;
}

// Qwen3-MoE's state dict: no attention biases, QK-norm weights, the router as mlp.gate, and one
// gate/up/down matrix per expert, as the hub's BF16 files hold them.
std::vector<PlannedTensor> qwen3_tensors(const Qwen3Preset& p, int64_t layers) {
    const int64_t h = p.hidden, inter = p.moe_intermediate, e = p.experts;
    const int64_t q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim;
    std::vector<PlannedTensor> t;
    // A linear layer the -FP8 checkpoint quantizes: E4M3 codes and their block scales, or BF16.
    auto linear = [&](const std::string& name, int64_t out, int64_t in, double gain = 1.0) {
        if (!p.fp8) {
            add(t, name, DType::BF16, {out, in}, matrix_fill(in, gain));
            return;
        }
        add(t, name, DType::F8_E4M3, {out, in}, e4m3_fill());
        constexpr int64_t b = tools::kFp8CheckpointBlock;
        add(t, name + "_scale_inv", DType::BF16, {(out + b - 1) / b, (in + b - 1) / b},
            fp8_scale_fill(in, gain));
    };
    add(t, "model.embed_tokens.weight", DType::BF16, {p.vocab, h}, embedding_fill());
    for (int64_t l = 0; l < layers; ++l) {
        const std::string base = "model.layers." + std::to_string(l) + ".";
        add(t, base + "input_layernorm.weight", DType::BF16, {h}, norm_fill());
        linear(base + "self_attn.q_proj.weight", q, h);
        linear(base + "self_attn.k_proj.weight", kv, h);
        linear(base + "self_attn.v_proj.weight", kv, h);
        linear(base + "self_attn.o_proj.weight", h, q, kAttentionOutputGain);
        add(t, base + "self_attn.q_norm.weight", DType::BF16, {p.head_dim}, norm_fill());
        add(t, base + "self_attn.k_norm.weight", DType::BF16, {p.head_dim}, norm_fill());
        add(t, base + "post_attention_layernorm.weight", DType::BF16, {h}, norm_fill());
        add(t, base + "mlp.gate.weight", DType::BF16, {e, h}, matrix_fill(h));
        for (int64_t x = 0; x < e; ++x) {
            const std::string ex = base + "mlp.experts." + std::to_string(x) + ".";
            linear(ex + "gate_proj.weight", inter, h);
            linear(ex + "up_proj.weight", inter, h);
            linear(ex + "down_proj.weight", h, inter);
        }
    }
    add(t, "model.norm.weight", DType::BF16, {h}, norm_fill());
    add(t, "lm_head.weight", DType::BF16, {p.vocab, h}, matrix_fill(h));
    return t;
}

// GLM-MoE-DSA's state dict: MLA projections and their norms, the indexer, dense MLPs for the first
// layers, then router (with its F32 correction bias), shared experts and one gate/up/down matrix
// per routed expert. The F32 correction bias takes the uniform stream too: each float is a +-0.02
// BF16 draw in its high half with random low mantissa bits, small values around 0 as a trained
// bias is (zero would leave the router's own scores).
std::vector<PlannedTensor> glm_tensors(const GlmPreset& p, int64_t layers, int64_t experts) {
    const int64_t h = p.hidden, qkd = p.nope + p.rope;
    std::vector<PlannedTensor> t;
    add(t, "model.embed_tokens.weight", DType::BF16, {p.vocab, h}, embedding_fill());
    for (int64_t l = 0; l < layers; ++l) {
        const std::string base = "model.layers." + std::to_string(l) + ".";
        const std::string at = base + "self_attn.";
        add(t, base + "input_layernorm.weight", DType::BF16, {h}, norm_fill());
        add(t, at + "q_a_proj.weight", DType::BF16, {p.q_lora_rank, h}, matrix_fill(h));
        add(t, at + "q_a_layernorm.weight", DType::BF16, {p.q_lora_rank}, norm_fill());
        add(t, at + "q_b_proj.weight", DType::BF16, {p.heads * qkd, p.q_lora_rank}, matrix_fill(p.q_lora_rank));
        add(t, at + "kv_a_proj_with_mqa.weight", DType::BF16, {p.kv_lora_rank + p.rope, h}, matrix_fill(h));
        add(t, at + "kv_a_layernorm.weight", DType::BF16, {p.kv_lora_rank}, norm_fill());
        add(t, at + "kv_b_proj.weight", DType::BF16, {p.heads * (p.nope + p.v), p.kv_lora_rank}, matrix_fill(p.kv_lora_rank));
        add(t, at + "o_proj.weight", DType::BF16, {h, p.heads * p.v}, matrix_fill(p.heads * p.v, kAttentionOutputGain));
        add(t, at + "indexer.wq_b.weight", DType::BF16, {p.index_heads * p.index_dim, p.q_lora_rank}, matrix_fill(p.q_lora_rank));
        add(t, at + "indexer.wk.weight", DType::BF16, {p.index_dim, h}, matrix_fill(h));
        add(t, at + "indexer.k_norm.weight", DType::BF16, {p.index_dim}, norm_fill());
        add(t, at + "indexer.k_norm.bias", DType::BF16, {p.index_dim}, bias_fill());
        add(t, at + "indexer.weights_proj.weight", DType::BF16, {p.index_heads, h}, matrix_fill(h));
        add(t, base + "post_attention_layernorm.weight", DType::BF16, {h}, norm_fill());
        const std::string mlp = base + "mlp.";
        if (l < p.dense_layers) {
            add(t, mlp + "gate_proj.weight", DType::BF16, {p.intermediate, h}, matrix_fill(h));
            add(t, mlp + "up_proj.weight", DType::BF16, {p.intermediate, h}, matrix_fill(h));
            add(t, mlp + "down_proj.weight", DType::BF16, {h, p.intermediate}, matrix_fill(p.intermediate));
            continue;
        }
        add(t, mlp + "gate.weight", DType::BF16, {experts, h}, matrix_fill(h));
        add(t, mlp + "gate.e_score_correction_bias", DType::F32, {experts}, bias_fill());
        const int64_t shared = p.moe_intermediate * p.shared;
        add(t, mlp + "shared_experts.gate_proj.weight", DType::BF16, {shared, h}, matrix_fill(h));
        add(t, mlp + "shared_experts.up_proj.weight", DType::BF16, {shared, h}, matrix_fill(h));
        add(t, mlp + "shared_experts.down_proj.weight", DType::BF16, {h, shared}, matrix_fill(shared));
        for (int64_t x = 0; x < experts; ++x) {
            const std::string ex = mlp + "experts." + std::to_string(x) + ".";
            add(t, ex + "gate_proj.weight", DType::BF16, {p.moe_intermediate, h}, matrix_fill(h));
            add(t, ex + "up_proj.weight", DType::BF16, {p.moe_intermediate, h}, matrix_fill(h));
            add(t, ex + "down_proj.weight", DType::BF16, {h, p.moe_intermediate}, matrix_fill(p.moe_intermediate));
        }
    }
    add(t, "model.norm.weight", DType::BF16, {h}, norm_fill());
    add(t, "lm_head.weight", DType::BF16, {p.vocab, h}, matrix_fill(h));
    return t;
}

// Consecutive tensors into shards of at most `limit` bytes (a tensor larger than the limit alone).
std::vector<PlannedShard> pack_shards(const std::vector<PlannedTensor>& tensors, uint64_t limit) {
    std::vector<PlannedShard> shards(1);
    for (size_t i = 0; i < tensors.size(); ++i) {
        PlannedShard* s = &shards.back();
        if (!s->tensors.empty() && s->data_bytes + tensors[i].nbytes > limit) {
            shards.emplace_back();
            s = &shards.back();
        }
        s->tensors.push_back(i);
        s->data_bytes += tensors[i].nbytes;
    }
    return shards;
}

// As few shards as the size limit allows, balanced: the smallest per-shard limit between the
// even split and `max_shard` that packs into ceil(total / max_shard) shards (or max_shard when
// none does), never splitting a tensor.
std::vector<PlannedShard> plan_shards(const std::vector<PlannedTensor>& tensors, uint64_t max_shard) {
    uint64_t total = 0;
    for (const auto& t : tensors) total += t.nbytes;
    const uint64_t count = std::max<uint64_t>(1, (total + max_shard - 1) / max_shard);
    uint64_t limit = std::min(max_shard, (total + count - 1) / count);
    std::vector<PlannedShard> shards = pack_shards(tensors, limit);
    const uint64_t step = std::max<uint64_t>(1, max_shard / 256);
    while (shards.size() > count && limit < max_shard) {
        limit = std::min(max_shard, limit + step);
        shards = pack_shards(tensors, limit);
    }
    if (shards.size() == 1) {
        shards[0].file_name = "model.safetensors";
    } else {
        for (size_t k = 0; k < shards.size(); ++k) {
            char name[64];
            std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k + 1, shards.size());
            shards[k].file_name = name;
        }
    }
    return shards;
}

std::string shape_json(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

// The safetensors header of a shard, padded with spaces to a multiple of 8 bytes as the
// reference writer does, so the data section starts aligned.
std::string shard_header(const SynthPlan& plan, const PlannedShard& shard) {
    std::string h = "{\"__metadata__\":{\"format\":\"pt\"}";
    uint64_t at = 0;
    for (size_t i : shard.tensors) {
        const PlannedTensor& t = plan.tensors[i];
        h += ",\"" + t.name + "\":{\"dtype\":\"" + std::string(dtype_name(t.dtype)) + "\",\"shape\":" +
             shape_json(t.shape) + ",\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + t.nbytes) +
             "]}";
        at += t.nbytes;
    }
    h += "}";
    h.append((8 - h.size() % 8) % 8, ' ');
    return h;
}

std::string index_json(const SynthPlan& plan) {
    std::vector<std::pair<std::string, std::string>> map;
    for (const PlannedShard& s : plan.shards)
        for (size_t i : s.tensors) map.emplace_back(plan.tensors[i].name, s.file_name);
    std::sort(map.begin(), map.end());
    std::string j = "{\n  \"metadata\": {\n    \"total_size\": " + std::to_string(plan.total_bytes()) +
                    "\n  },\n  \"weight_map\": {";
    for (size_t i = 0; i < map.size(); ++i)
        j += (i ? ",\n    \"" : "\n    \"") + map[i].first + "\": \"" + map[i].second + "\"";
    return j + "\n  }\n}\n";
}

// ---- values -----------------------------------------------------------------------------------

constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

// splitmix64's output function: a bijective mix of a 64-bit counter.
uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// One key per (seed, tensor name): a tensor's values do not depend on which others exist.
uint64_t tensor_key(uint64_t seed, const std::string& name) {
    uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
    for (unsigned char c : name) h = (h ^ c) * 0x100000001B3ull;
    return mix64(seed * kGamma ^ h);
}

uint16_t f32_to_bf16(float f) {
    uint32_t bits = std::bit_cast<uint32_t>(f);
    bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>(bits >> 16);
}

static_assert(std::endian::native == std::endian::little, "synth writes little-endian words as they are in memory");

uint64_t word_random(uint64_t key, uint64_t w) { return mix64(key + (w + 1) * kGamma); }

// Words [first, first + n) of a tensor's stream into out (8 bytes each). Word w is a pure function
// of (key, w), so any range can be produced alone; one loop per kind keeps the hot loop simple.
void fill_words(const FillSpec& fill, uint64_t key, uint64_t first, size_t n, std::byte* out) {
    switch (fill.kind) {
        case Fill::random_bytes:
            for (size_t i = 0; i < n; ++i) {
                const uint64_t r = word_random(key, first + i);
                std::memcpy(out + 8 * i, &r, 8);
            }
            return;
        case Fill::e4m3_codes: {
            // Eight codes a word, from 16 random bits each (two random words).
            const tools::E4m3GaussianCodes& codes = tools::e4m3_gaussian_codes();
            for (size_t i = 0; i < n; ++i) {
                const uint64_t r[2] = {word_random(key, 2 * (first + i)), word_random(key, 2 * (first + i) + 1)};
                uint64_t v = 0;
                for (int b = 0; b < 8; ++b)
                    v |= static_cast<uint64_t>(codes.pick(static_cast<uint16_t>(r[b / 4] >> (16 * (b % 4))))) << (8 * b);
                std::memcpy(out + 8 * i, &v, 8);
            }
            return;
        }
        case Fill::byte_range: {
            const uint32_t span = static_cast<uint32_t>(fill.byte_hi - fill.byte_lo) + 1;
            for (size_t i = 0; i < n; ++i) {
                const uint64_t r = word_random(key, first + i);
                uint64_t v = 0;
                for (int b = 0; b < 8; ++b) {
                    const uint32_t byte = static_cast<uint32_t>((r >> (8 * b)) & 0xFF);
                    v |= static_cast<uint64_t>(fill.byte_lo + ((byte * span) >> 8)) << (8 * b);
                }
                std::memcpy(out + 8 * i, &v, 8);
            }
            return;
        }
        case Fill::uniform: {
            // Four values per word from 16 random bits each: u = (bits + 0.5) / 32768 - 1 in (-1, 1).
            const float a = fill.half_width * (2.0f / 65536.0f);
            const float b = fill.center + fill.half_width * (1.0f / 65536.0f - 1.0f);
            for (size_t i = 0; i < n; ++i) {
                const uint64_t r = word_random(key, first + i);
                uint64_t v = 0;
                for (int k = 0; k < 4; ++k) {
                    const auto bits = static_cast<int32_t>((r >> (16 * k)) & 0xFFFF);  // signed: a cheap conversion
                    const float x = a * static_cast<float>(bits) + b;
                    v |= static_cast<uint64_t>(f32_to_bf16(x)) << (16 * k);
                }
                std::memcpy(out + 8 * i, &v, 8);
            }
            return;
        }
    }
}

// ---- writing ----------------------------------------------------------------------------------

// Removes what a previous synth (or hub download) left: an index naming other shards, stale
// shards, and config.json first, so the directory never looks like a model mid-write.
Expected<void> clear_checkpoint(const fs::path& dir) {
    std::error_code ec;
    fs::remove(dir / "config.json", ec);
    if (ec) return fail(ErrorKind::io, (dir / "config.json").string() + ": cannot remove: " + ec.message());
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        const bool ours = name == "generation_config.json" || name == "model.safetensors.index.json" ||
                          (name.rfind("model", 0) == 0 && name.size() > 12 &&
                           name.compare(name.size() - 12, 12, ".safetensors") == 0);
        if (!ours || !entry.is_regular_file()) continue;
        fs::remove(entry.path(), ec);
        if (ec) return fail(ErrorKind::io, entry.path().string() + ": cannot remove: " + ec.message());
    }
    if (ec) return fail(ErrorKind::io, dir.string() + ": cannot list: " + ec.message());
    return {};
}

Expected<void> prepare_directory(const std::string& out_dir, bool force) {
    const fs::path dir(out_dir);
    std::error_code ec;
    if (fs::exists(dir, ec)) {
        if (!fs::is_directory(dir, ec)) return fail(ErrorKind::invalid_argument, out_dir + ": exists and is not a directory");
        const bool empty = fs::is_empty(dir, ec);
        if (ec) return fail(ErrorKind::io, out_dir + ": cannot list: " + ec.message());
        if (!empty && !force)
            return fail(ErrorKind::invalid_argument, out_dir + ": exists and is not empty (--force writes into it)");
        if (!empty) return clear_checkpoint(dir);
        return {};
    }
    // A directory is not created through a symlink (mkdir -p refuses too): say so, not "File exists".
    if (fs::is_symlink(fs::symlink_status(dir, ec)))
        return fail(ErrorKind::invalid_argument, out_dir + ": a symlink to " + symlink_end(out_dir) + ", which does not exist");
    fs::create_directories(dir, ec);
    if (ec) return fail(ErrorKind::io, out_dir + ": cannot create: " + ec.message());
    return {};
}

// Writes a shard's bytes behind the writer and drops them from the page cache, one window behind:
// a 100 GB checkpoint must not push everything else out of RAM, and the progress rate is then
// the disk's, not the page cache's.
class WritebackWindow {
public:
    WritebackWindow(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

    Expected<void> wrote_up_to(uint64_t end) {
        if (end - started_ < kWindow) return {};
        if (::sync_file_range(fd_, static_cast<off_t>(started_), static_cast<off_t>(end - started_),
                              SYNC_FILE_RANGE_WRITE) != 0)
            return fail(ErrorKind::io, path_ + ": write-back failed: " + std::strerror(errno));
        if (auto d = drop(started_); !d) return d;
        started_ = end;
        return {};
    }

private:
    static constexpr uint64_t kWindow = uint64_t{64} << 20;

    // Waits for [dropped_, upto) to reach the disk, then releases those pages.
    Expected<void> drop(uint64_t upto) {
        if (upto <= dropped_) return {};
        if (::sync_file_range(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(upto - dropped_),
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0)
            return fail(ErrorKind::io, path_ + ": write-back failed: " + std::strerror(errno));
        ::posix_fadvise(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(upto - dropped_), POSIX_FADV_DONTNEED);
        dropped_ = upto;
        return {};
    }

    int fd_;
    std::string path_;
    uint64_t started_ = 0;  // write-back started for [0, started_)
    uint64_t dropped_ = 0;  // on disk and out of the page cache for [0, dropped_)
};

struct WriteState {
    const SynthPlan& plan;
    const WriteOptions& options;
    std::vector<std::byte> buffer;
    uint64_t written = 0;
    Clock::time_point start = Clock::now();
};

Expected<void> write_shard(WriteState& st, const PlannedShard& shard, const std::string& path) {
    STORMO_TRY_ASSIGN(auto fd, FileDescriptor::create(path));
    const std::string header = shard_header(st.plan, shard);
    std::byte prefix[8];
    const uint64_t header_len = header.size();
    for (int b = 0; b < 8; ++b) prefix[b] = static_cast<std::byte>(header_len >> (8 * b));
    if (auto w = write_all(fd.get(), prefix, sizeof prefix, path); !w) return w;
    if (auto w = write_all(fd.get(), header.data(), header.size(), path); !w) return w;
    uint64_t file_at = sizeof prefix + header.size();
    WritebackWindow window(fd.get(), path);
    for (size_t i : shard.tensors) {
        const PlannedTensor& t = st.plan.tensors[i];
        for (uint64_t at = 0; at < t.nbytes; at += st.buffer.size()) {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(st.buffer.size(), t.nbytes - at));
            fill_tensor_bytes(st.plan, i, at, st.buffer.data(), n);
            if (auto w = write_all(fd.get(), st.buffer.data(), n, path + " (tensor " + t.name + ")"); !w) return w;
            file_at += n;
            st.written += n;
            if (auto wb = window.wrote_up_to(file_at); !wb) return wb;
            if (st.options.progress)
                st.options.progress({st.written, st.plan.total_bytes(),
                                     std::chrono::duration<double>(Clock::now() - st.start).count(), path});
        }
    }
    if (::fdatasync(fd.get()) != 0) return fail(ErrorKind::io, path + ": fdatasync failed: " + std::strerror(errno));
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
    return fd.close(path);
}

}  // namespace

uint64_t SynthPlan::total_bytes() const {
    uint64_t n = 0;
    for (const auto& t : tensors) n += t.nbytes;
    return n;
}

const std::vector<SynthPresetInfo>& synth_presets() {
    static const std::vector<SynthPresetInfo> infos = [] {
        std::vector<SynthPresetInfo> v;
        for (const GptOssPreset& p : gpt_oss_presets()) v.push_back({p.name, p.description});
        for (const Qwen3Preset& p : qwen3_presets()) v.push_back({p.name, p.description});
        for (const GlmPreset& p : glm_presets()) v.push_back({p.name, p.description});
        return v;
    }();
    return infos;
}

Expected<SynthPlan> plan_synth(const SynthOptions& options) {
    const GptOssPreset* preset = find_preset(options.preset);
    const Qwen3Preset* qwen3 = find_qwen3_preset(options.preset);
    const GlmPreset* glm = find_glm_preset(options.preset);
    if (preset == nullptr && qwen3 == nullptr && glm == nullptr) {
        std::string known;
        for (const auto& p : synth_presets()) known += (known.empty() ? "" : ", ") + p.name;
        return fail(ErrorKind::invalid_argument, "--preset \"" + options.preset + "\" is not a known preset (" + known + ")");
    }
    constexpr int kMaxLayers = 1024;
    const int64_t preset_layers = preset ? preset->layers : qwen3 ? qwen3->layers : glm->layers;
    const int64_t preset_experts = preset ? preset->experts : qwen3 ? qwen3->experts : glm->experts;
    const int64_t preset_top_k = preset ? preset->top_k : qwen3 ? qwen3->top_k : glm->top_k;
    const int64_t layers = options.layers.value_or(static_cast<int>(preset_layers));
    const int64_t experts = options.experts.value_or(static_cast<int>(preset_experts));
    if (experts < preset_top_k || experts > preset_experts)
        return fail(ErrorKind::invalid_argument, "--experts must be between the experts per token (" +
                                                     std::to_string(preset_top_k) + ") and the model's " +
                                                     std::to_string(preset_experts) + ", got " + std::to_string(experts));
    if (layers < 1 || layers > kMaxLayers)
        return fail(ErrorKind::invalid_argument, "--layers must be between 1 and " + std::to_string(kMaxLayers) +
                                                     ", got " + std::to_string(layers));
    if (options.max_shard_bytes < (uint64_t{1} << 20))
        return fail(ErrorKind::invalid_argument, "the shard size limit must be at least 1 MiB");
    SynthPlan plan;
    plan.preset = options.preset;
    plan.seed = options.seed;
    plan.layers = static_cast<int>(layers);
    if (preset != nullptr) {
        GptOssPreset cut = *preset;
        cut.experts = experts;
        plan.config_json = gpt_oss_config_json(cut, layers);
        plan.generation_config_json = gpt_oss_generation_config_json(cut);
        plan.tensors = gpt_oss_tensors(cut, layers);
    } else if (qwen3 != nullptr) {
        Qwen3Preset cut = *qwen3;
        cut.experts = experts;
        plan.config_json = qwen3_config_json(cut, layers);
        plan.generation_config_json = qwen3_generation_config_json(cut);
        plan.tensors = qwen3_tensors(cut, layers);
    } else {
        plan.config_json = glm_config_json(*glm, layers, experts);
        plan.generation_config_json = glm_generation_config_json(*glm);
        plan.tensors = glm_tensors(*glm, layers, experts);
    }
    plan.shards = plan_shards(plan.tensors, options.max_shard_bytes);
    return plan;
}

void fill_tensor_bytes(const SynthPlan& plan, size_t index, uint64_t offset, std::byte* out, size_t size) {
    const PlannedTensor& t = plan.tensors.at(index);
    const uint64_t key = tensor_key(plan.seed, t.name);
    std::byte word[8];
    uint64_t at = offset;
    const uint64_t end = offset + size;
    // A leading partial word, whole words straight into the output, a trailing partial word.
    if (at % 8 != 0) {
        fill_words(t.fill, key, at / 8, 1, word);
        const uint64_t take = std::min<uint64_t>(8 - at % 8, end - at);
        std::memcpy(out, word + at % 8, static_cast<size_t>(take));
        at += take;
    }
    const size_t whole = static_cast<size_t>((end - at) / 8);
    fill_words(t.fill, key, at / 8, whole, out + (at - offset));
    at += 8 * static_cast<uint64_t>(whole);
    if (at < end) {
        fill_words(t.fill, key, at / 8, 1, word);
        std::memcpy(out + (at - offset), word, static_cast<size_t>(end - at));
    }
}

Expected<void> write_synth(const SynthPlan& plan, const std::string& out_dir, const WriteOptions& options) {
    if (options.chunk_bytes < 8 || options.chunk_bytes % 8 != 0)
        return fail(ErrorKind::invalid_argument, "synth: the chunk size must be a positive multiple of 8 bytes");
    if (auto d = prepare_directory(out_dir, options.force); !d) return d;
    WriteState st{plan, options, {}, 0, Clock::now()};
    try {
        st.buffer.resize(static_cast<size_t>(options.chunk_bytes));
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::resource, "synth: cannot allocate a write buffer of " + std::to_string(options.chunk_bytes) + " bytes");
    }
    const fs::path dir(out_dir);
    for (const PlannedShard& shard : plan.shards)
        if (auto w = write_shard(st, shard, (dir / shard.file_name).string()); !w) return w;
    if (plan.shards.size() > 1)
        if (auto w = write_file((dir / "model.safetensors.index.json").string(), index_json(plan)); !w) return w;
    if (auto w = write_file((dir / "generation_config.json").string(), plan.generation_config_json); !w) return w;
    return write_file((dir / "config.json").string(), plan.config_json);
}

}  // namespace stormo::synth
