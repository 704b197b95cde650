// The GPT-OSS family: config.json summary for `stormo inspect`, tensor roles, and the model load.
#include "gpt_oss_family.hpp"

#include <algorithm>
#include <cmath>

#include "gpt_oss_config.hpp"
#include "gpt_oss_model.hpp"
#include "stormo/toolkit/attention.hpp"
#include "stormo/toolkit/plugin_entry.hpp"

namespace stormo::gpt_oss {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

Expected<ModelSummary> GptOssFamily::summarize(const ModelConfig& config) const {
    STORMO_TRY_ASSIGN(auto parsed, parse_gpt_oss_config(config));
    const GptOssConfig& c = parsed;
    const auto sliding = std::count(c.layer_types.begin(), c.layer_types.end(), AttentionKind::sliding);
    ModelSummary s;
    s.dimensions = {{"hidden_size", c.hidden_size},
                    {"intermediate_size", c.intermediate_size},
                    {"num_hidden_layers", c.n_layers},
                    {"num_attention_heads", c.n_heads},
                    {"num_key_value_heads", c.n_kv_heads},
                    {"head_dim", c.head_dim},
                    {"num_local_experts", c.n_experts},
                    {"num_experts_per_tok", c.top_k},
                    {"vocab_size", c.vocab_size},
                    {"sliding_window", c.sliding_window},
                    {"sliding_layers", static_cast<int64_t>(sliding)},
                    {"full_layers", c.n_layers - static_cast<int64_t>(sliding)},
                    {"rope_theta", std::llround(c.rope.theta)},
                    {"rope_yarn", c.rope.type == toolkit::RopeType::yarn ? 1 : 0}};
    if (c.rope.type == toolkit::RopeType::yarn) {
        s.dimensions.emplace_back("rope_factor", std::llround(c.rope.factor));
        s.dimensions.emplace_back("rope_original_max_position_embeddings",
                                  std::llround(c.rope.original_max_position_embeddings));
    }
    s.dimensions.emplace_back("mxfp4_experts", c.mxfp4 ? 1 : 0);
    s.n_layers = static_cast<int>(c.n_layers);
    s.n_moe_layers = static_cast<int>(c.n_layers);
    s.n_experts = static_cast<int>(c.n_experts);
    s.top_k = static_cast<int>(c.top_k);
    s.hidden_size = static_cast<size_t>(c.hidden_size);
    s.vocab_size = static_cast<size_t>(c.vocab_size);
    s.kv_floats_per_token = static_cast<size_t>(c.n_layers) * 2 * c.kv_width();
    // The sliding layers keep a ring, not the context: the buffers as the model declares them.
    const toolkit::GqaShape shape{static_cast<size_t>(c.n_heads), static_cast<size_t>(c.n_kv_heads),
                                  static_cast<size_t>(c.head_dim)};
    for (int l = 0; l < c.n_layers; ++l)
        for (KvBufferDecl& b : toolkit::gqa_kv_buffers(shape, c.window_of(l))) s.kv_buffers.push_back(std::move(b));
    return s;
}

TensorRole GptOssFamily::classify(std::string_view name) const {
    if (starts_with(name, "model.embed_tokens.")) return TensorRole::embedding;
    if (starts_with(name, "lm_head.")) return TensorRole::head;
    if (contains(name, ".mlp.experts.")) return TensorRole::experts;
    if (contains(name, ".mlp.router.")) return TensorRole::router;
    if (contains(name, ".self_attn.")) return TensorRole::attention;
    if (starts_with(name, "model.norm.") || contains(name, "layernorm.")) return TensorRole::norm;
    return TensorRole::other;
}

Expected<std::unique_ptr<Model>> GptOssFamily::load(LoadContext& ctx) const { return GptOssModel::load(ctx); }

}  // namespace stormo::gpt_oss

STORMO_FAMILY_PLUGIN(stormo::gpt_oss::GptOssFamily, "gpt_oss", "0.1.0",
                     "GPT-OSS: GQA with sinks, sliding/full layers, YaRN RoPE, top-k MoE with clipped SwiGLU (BF16, MXFP4)",
                     "GptOssForCausalLM,gpt_oss")
