#pragma once
// GPT-OSS hyper-parameters read from config.json. Both dialects are accepted:
//   transformers 5: "rope_parameters": {rope_type, rope_theta, factor, beta_fast, beta_slow,
//                   original_max_position_embeddings, truncate}
//   the hub (2025): top-level "rope_theta" + "rope_scaling": {rope_type | type, factor, ...}
// Every field the math needs is read here; a missing one is an error naming it. Header-only
// (inline) so the unit tests parse configs exactly as the plugin does.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/json.hpp"
#include "yarn_rope.hpp"

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
    RopeParams rope;
    bool mxfp4 = false;                               // quantization_config.quant_method == "mxfp4"
    std::vector<std::string> modules_to_not_convert;  // from quantization_config

    size_t kv_width() const { return static_cast<size_t>(n_kv_heads * head_dim); }
    size_t q_width() const { return static_cast<size_t>(n_heads * head_dim); }
};

namespace config_detail {

template <class T>
tl::unexpected<Error> propagate(const Expected<T>& e) {
    return tl::unexpected<Error>(e.error());
}

inline Error invalid(const ModelConfig& c, const std::string& what) {
    return Error{ErrorKind::mismatch, c.source() + ": " + what};
}

inline Expected<int64_t> positive(const ModelConfig& c, std::string_view key) {
    auto v = c.integer(key);
    if (!v) return v;
    if (*v <= 0) return tl::unexpected(invalid(c, "field \"" + std::string(key) + "\" must be positive, found " +
                                                      std::to_string(*v)));
    return v;
}

// An optional number: absent or null gives nullopt, a present non-number is an error.
inline Expected<std::optional<double>> optional_number(const ModelConfig& c, std::string_view key) {
    if (!c.has(key)) return std::optional<double>{};
    auto v = c.number(key);
    if (!v) return propagate(v);
    return std::optional<double>{*v};
}

inline Expected<RopeParams> parse_rope(const ModelConfig& c) {
    // rope_parameters (transformers 5) or rope_scaling (hub); neither means plain RoPE.
    std::optional<ModelConfig> nested;
    if (c.has("rope_parameters")) {
        auto p = c.object("rope_parameters");
        if (!p) return propagate(p);
        nested = std::move(*p);
    } else if (c.has("rope_scaling")) {
        auto p = c.object("rope_scaling");
        if (!p) return propagate(p);
        nested = std::move(*p);
    }
    // rope_theta: inside rope_parameters (transformers 5), else at the top level (hub).
    const ModelConfig& theta_source = (nested && nested->has("rope_theta")) ? *nested : c;
    RopeParams rope;
    auto theta = theta_source.number("rope_theta");
    if (!theta) return propagate(theta);
    if (*theta <= 1.0) return tl::unexpected(invalid(theta_source, "field \"rope_theta\" must be > 1"));
    rope.theta = *theta;
    if (!nested) return rope;  // no scaling section: plain RoPE

    // Per-layer-type sections (a dict keyed by layer type) are another model's feature.
    for (const char* kind : {"full_attention", "sliding_attention"})
        if (nested->has(kind))
            return fail(ErrorKind::unsupported, nested->source() + ": per-layer-type RoPE parameters are not supported");

    std::string type;
    if (nested->has("rope_type")) {
        auto t = nested->string("rope_type");
        if (!t) return propagate(t);
        type = *t;
    } else if (nested->has("type")) {
        auto t = nested->string("type");
        if (!t) return propagate(t);
        type = *t;
    } else {
        return tl::unexpected(nested->missing("rope_type"));
    }
    if (nested->has("partial_rotary_factor")) {
        auto prf = nested->number("partial_rotary_factor");
        if (!prf) return propagate(prf);
        if (*prf != 1.0)
            return fail(ErrorKind::unsupported, nested->source() + ": partial_rotary_factor " + std::to_string(*prf) +
                                                    " is not supported by gpt_oss (only 1)");
    }
    if (type == "default") return rope;
    if (type != "yarn")
        return fail(ErrorKind::unsupported, nested->source() + ": rope_type \"" + type +
                                                "\" is not supported by gpt_oss (default, yarn)");

    rope.type = RopeType::yarn;
    auto original = nested->number("original_max_position_embeddings");
    if (!original) return propagate(original);
    if (*original <= 0.0)
        return tl::unexpected(invalid(*nested, "field \"original_max_position_embeddings\" must be positive"));
    rope.original_max_position_embeddings = *original;
    if (nested->has("factor")) {
        auto f = nested->number("factor");
        if (!f) return propagate(f);
        rope.factor = *f;
    } else {
        // transformers derives a null factor from the two context lengths.
        auto max_pos = c.number("max_position_embeddings");
        if (!max_pos) return tl::unexpected(nested->missing("factor"));
        rope.factor = *max_pos / rope.original_max_position_embeddings;
    }
    if (rope.factor <= 0.0) return tl::unexpected(invalid(*nested, "field \"factor\" must be positive"));
    // beta_fast / beta_slow default to the YaRN paper's 32 / 1 in transformers (`get(...) or 32`).
    auto beta_fast = optional_number(*nested, "beta_fast");
    if (!beta_fast) return propagate(beta_fast);
    auto beta_slow = optional_number(*nested, "beta_slow");
    if (!beta_slow) return propagate(beta_slow);
    rope.beta_fast = beta_fast->value_or(0.0) != 0.0 ? **beta_fast : 32.0;
    rope.beta_slow = beta_slow->value_or(0.0) != 0.0 ? **beta_slow : 1.0;
    // transformers: rope_parameters.get("truncate", True).
    if (nested->has("truncate")) {
        auto t = nested->boolean("truncate");
        if (!t) return propagate(t);
        rope.truncate = *t;
    }
    auto af = optional_number(*nested, "attention_factor");
    if (!af) return propagate(af);
    rope.attention_factor = *af;
    auto ms = optional_number(*nested, "mscale");
    if (!ms) return propagate(ms);
    rope.mscale = *ms;
    auto msa = optional_number(*nested, "mscale_all_dim");
    if (!msa) return propagate(msa);
    rope.mscale_all_dim = *msa;
    return rope;
}

inline Expected<std::vector<AttentionKind>> parse_layer_types(const ModelConfig& c, int64_t n_layers) {
    auto names = c.strings("layer_types");
    if (!names) return propagate(names);
    if (static_cast<int64_t>(names->size()) != n_layers)
        return tl::unexpected(invalid(c, "field \"layer_types\" has " + std::to_string(names->size()) +
                                             " entries, num_hidden_layers is " + std::to_string(n_layers)));
    std::vector<AttentionKind> kinds;
    for (size_t i = 0; i < names->size(); ++i) {
        const std::string& n = (*names)[i];
        if (n == "sliding_attention") kinds.push_back(AttentionKind::sliding);
        else if (n == "full_attention") kinds.push_back(AttentionKind::full);
        else
            return fail(ErrorKind::unsupported, c.source() + ": field \"layer_types\" item " + std::to_string(i) +
                                                    " is \"" + n + "\" (gpt_oss knows sliding_attention, full_attention)");
    }
    return kinds;
}

inline Expected<void> parse_quantization(const ModelConfig& c, GptOssConfig& out) {
    if (!c.has("quantization_config")) return {};
    auto q = c.object("quantization_config");
    if (!q) return propagate(q);
    auto method = q->string("quant_method");
    if (!method) return propagate(method);
    if (*method != "mxfp4")
        return fail(ErrorKind::unsupported, q->source() + ": quant_method \"" + *method +
                                                "\" is not supported by gpt_oss (only mxfp4)");
    out.mxfp4 = true;
    if (q->has("modules_to_not_convert")) {
        auto m = q->strings("modules_to_not_convert");
        if (!m) return propagate(m);
        out.modules_to_not_convert = std::move(*m);
    }
    return {};
}

inline Expected<void> check_shapes(const ModelConfig& c, const GptOssConfig& g) {
    if (g.n_heads % g.n_kv_heads != 0)
        return tl::unexpected(invalid(c, "num_attention_heads (" + std::to_string(g.n_heads) +
                                             ") is not a multiple of num_key_value_heads (" +
                                             std::to_string(g.n_kv_heads) + ")"));
    if (g.head_dim % 2 != 0)
        return tl::unexpected(invalid(c, "field \"head_dim\" must be even for the split-half rotation, found " +
                                             std::to_string(g.head_dim)));
    if (g.top_k > g.n_experts)
        return tl::unexpected(invalid(c, "num_experts_per_tok (" + std::to_string(g.top_k) +
                                             ") exceeds num_local_experts (" + std::to_string(g.n_experts) + ")"));
    if (g.mxfp4 && (g.hidden_size % 32 != 0 || g.intermediate_size % 32 != 0))
        return tl::unexpected(invalid(c, "MXFP4 needs hidden_size and intermediate_size divisible by 32"));
    if (!(g.swiglu_limit > 0.0)) return tl::unexpected(invalid(c, "field \"swiglu_limit\" must be positive"));
    if (!(g.rms_norm_eps > 0.0)) return tl::unexpected(invalid(c, "field \"rms_norm_eps\" must be positive"));
    return {};
}

}  // namespace config_detail

inline Expected<GptOssConfig> parse_gpt_oss_config(const ModelConfig& c) {
    using namespace config_detail;
    GptOssConfig g;
    struct Dim {
        int64_t* target;
        std::string_view key;
    };
    for (const Dim& d : {Dim{&g.hidden_size, "hidden_size"}, Dim{&g.intermediate_size, "intermediate_size"},
                         Dim{&g.n_layers, "num_hidden_layers"}, Dim{&g.n_heads, "num_attention_heads"},
                         Dim{&g.n_kv_heads, "num_key_value_heads"}, Dim{&g.head_dim, "head_dim"},
                         Dim{&g.vocab_size, "vocab_size"}}) {
        auto v = positive(c, d.key);
        if (!v) return propagate(v);
        *d.target = *v;
    }
    auto experts = c.integer_any({"num_local_experts", "num_experts"});
    if (!experts) return propagate(experts);
    g.n_experts = *experts;
    auto top_k = c.integer_any({"num_experts_per_tok", "experts_per_token"});
    if (!top_k) return propagate(top_k);
    g.top_k = *top_k;
    if (g.n_experts <= 0 || g.top_k <= 0)
        return tl::unexpected(invalid(c, "num_local_experts and num_experts_per_tok must be positive"));

    auto kinds = parse_layer_types(c, g.n_layers);
    if (!kinds) return propagate(kinds);
    g.layer_types = std::move(*kinds);
    const bool any_sliding = std::find(g.layer_types.begin(), g.layer_types.end(), AttentionKind::sliding) !=
                             g.layer_types.end();
    if (any_sliding) {
        auto w = positive(c, "sliding_window");
        if (!w) return propagate(w);
        g.sliding_window = *w;
    }

    auto limit = c.number("swiglu_limit");
    if (!limit) return propagate(limit);
    g.swiglu_limit = *limit;
    auto eps = c.number("rms_norm_eps");
    if (!eps) return propagate(eps);
    g.rms_norm_eps = *eps;
    auto bias = c.boolean("attention_bias");
    if (!bias) return propagate(bias);
    g.attention_bias = *bias;
    // GptOssConfig's own default is untied; an explicit value wins.
    if (c.has("tie_word_embeddings")) {
        auto tie = c.boolean("tie_word_embeddings");
        if (!tie) return propagate(tie);
        g.tie_word_embeddings = *tie;
    }

    auto rope = parse_rope(c);
    if (!rope) return propagate(rope);
    g.rope = *rope;
    if (auto q = parse_quantization(c, g); !q) return tl::unexpected(q.error());
    if (auto s = check_shapes(c, g); !s) return tl::unexpected(s.error());
    return g;
}

// Whether a module (e.g. "model.layers.3.mlp.experts") is listed in modules_to_not_convert. As
// transformers, a pattern matches from the start of the name; '*' matches any run of characters.
inline bool glob_prefix_match(std::string_view pattern, std::string_view name) {
    if (pattern.empty()) return true;
    if (pattern.front() == '*') {
        for (size_t skip = 0; skip <= name.size(); ++skip)
            if (glob_prefix_match(pattern.substr(1), name.substr(skip))) return true;
        return false;
    }
    if (name.empty() || pattern.front() != name.front()) return false;
    return glob_prefix_match(pattern.substr(1), name.substr(1));
}

inline bool module_not_converted(const GptOssConfig& g, std::string_view module) {
    for (const std::string& p : g.modules_to_not_convert)
        if (glob_prefix_match(p, module)) return true;
    return false;
}

}  // namespace stormo::gpt_oss
