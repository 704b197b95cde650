#pragma once
// GPT-OSS hyper-parameters from config.json, in either dialect (transformers 5's rope_parameters
// and num_local_experts; the hub's rope_theta/rope_scaling and experts_per_token). Every field the
// math needs is read here; a missing one is an error naming it. Header-only so the plugin's unit
// tests parse configs exactly as the plugin does.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "stormo/toolkit/config_reader.hpp"

namespace stormo::gpt_oss {

enum class AttentionKind { full, sliding };

struct GptOssConfig {
    int64_t hidden_size = 0;
    int64_t intermediate_size = 0;
    int64_t n_layers = 0;
    int64_t n_heads = 0;
    int64_t n_kv_heads = 0;
    int64_t head_dim = 0;
    int64_t vocab_size = 0;
    int64_t n_experts = 0;
    int64_t top_k = 0;
    int64_t sliding_window = 0;  // 0 when no layer slides
    std::vector<AttentionKind> layer_types;
    double swiglu_limit = 0.0;
    double rms_norm_eps = 0.0;
    bool attention_bias = false;
    bool tie_word_embeddings = false;
    toolkit::RopeParams rope;
    bool mxfp4 = false;                               // quantization_config.quant_method == "mxfp4"
    std::vector<std::string> modules_to_not_convert;  // from quantization_config

    size_t kv_width() const { return static_cast<size_t>(n_kv_heads * head_dim); }
    size_t q_width() const { return static_cast<size_t>(n_heads * head_dim); }
    int64_t window_of(int layer) const {
        return layer_types[static_cast<size_t>(layer)] == AttentionKind::sliding ? sliding_window : 0;
    }
};

namespace config_detail {

inline std::vector<AttentionKind> read_layer_types(toolkit::ConfigReader& r, int64_t n_layers) {
    const std::vector<std::string> names = r.strings("layer_types");
    if (!r.ok()) return {};
    r.require(static_cast<int64_t>(names.size()) == n_layers,
              "field \"layer_types\" has " + std::to_string(names.size()) + " entries, num_hidden_layers is " +
                  std::to_string(n_layers));
    std::vector<AttentionKind> kinds;
    for (size_t i = 0; i < names.size() && r.ok(); ++i) {
        if (names[i] == "sliding_attention") kinds.push_back(AttentionKind::sliding);
        else if (names[i] == "full_attention") kinds.push_back(AttentionKind::full);
        else
            r.require(false, "field \"layer_types\" item " + std::to_string(i) + " is \"" + names[i] +
                                 "\" (gpt_oss knows sliding_attention, full_attention)",
                      ErrorKind::unsupported);
    }
    return kinds;
}

inline void read_quantization(toolkit::ConfigReader& r, GptOssConfig& g) {
    const auto q = r.optional_object("quantization_config");
    if (!q) return;
    toolkit::ConfigReader qr(*q);
    const std::string method = qr.string("quant_method");
    qr.require(!qr.ok() || method == "mxfp4", "quant_method \"" + method + "\" is not supported by gpt_oss (only mxfp4)",
               ErrorKind::unsupported);
    if (qr.has("modules_to_not_convert")) g.modules_to_not_convert = qr.strings("modules_to_not_convert");
    if (!qr.ok()) return r.fail_with(qr.status().error());
    g.mxfp4 = true;
}

inline void check_shapes(toolkit::ConfigReader& r, const GptOssConfig& g) {
    if (!r.ok()) return;
    r.require(g.n_heads % g.n_kv_heads == 0, "num_attention_heads (" + std::to_string(g.n_heads) +
                                                 ") is not a multiple of num_key_value_heads (" +
                                                 std::to_string(g.n_kv_heads) + ")");
    r.require(g.head_dim % 2 == 0, "field \"head_dim\" must be even for the split-half rotation, found " +
                                       std::to_string(g.head_dim));
    r.require(g.top_k <= g.n_experts, "num_experts_per_tok (" + std::to_string(g.top_k) +
                                          ") exceeds num_local_experts (" + std::to_string(g.n_experts) + ")");
    r.require(!g.mxfp4 || (g.hidden_size % 32 == 0 && g.intermediate_size % 32 == 0),
              "MXFP4 needs hidden_size and intermediate_size divisible by 32");
    r.require(g.swiglu_limit > 0.0, "field \"swiglu_limit\" must be positive");
    r.require(g.rms_norm_eps > 0.0, "field \"rms_norm_eps\" must be positive");
    r.require(g.rope.partial_rotary_factor == 1.0, "partial_rotary_factor " + std::to_string(g.rope.partial_rotary_factor) +
                                                       " is not supported by gpt_oss (only 1)",
              ErrorKind::unsupported);
}

}  // namespace config_detail

inline Expected<GptOssConfig> parse_gpt_oss_config(const ModelConfig& c) {
    using namespace config_detail;
    toolkit::ConfigReader r(c);
    GptOssConfig g;
    g.hidden_size = r.positive("hidden_size");
    g.intermediate_size = r.positive("intermediate_size");
    g.n_layers = r.positive("num_hidden_layers");
    g.n_heads = r.positive("num_attention_heads");
    g.n_kv_heads = r.positive("num_key_value_heads");
    g.head_dim = r.positive("head_dim");
    g.vocab_size = r.positive("vocab_size");
    g.n_experts = r.positive_any({"num_local_experts", "num_experts"});
    g.top_k = r.positive_any({"num_experts_per_tok", "experts_per_token"});
    g.layer_types = read_layer_types(r, g.n_layers);
    if (std::find(g.layer_types.begin(), g.layer_types.end(), AttentionKind::sliding) != g.layer_types.end())
        g.sliding_window = r.positive("sliding_window");
    g.swiglu_limit = r.number("swiglu_limit");
    g.rms_norm_eps = r.number("rms_norm_eps");
    g.attention_bias = r.boolean("attention_bias");
    g.tie_word_embeddings = r.boolean_or("tie_word_embeddings", false);  // GptOssConfig's default: untied
    g.rope = r.rope();
    read_quantization(r, g);
    check_shapes(r, g);
    return r.result(std::move(g));
}

inline bool module_not_converted(const GptOssConfig& g, std::string_view module) {
    return toolkit::module_listed(g.modules_to_not_convert, module);
}

}  // namespace stormo::gpt_oss
