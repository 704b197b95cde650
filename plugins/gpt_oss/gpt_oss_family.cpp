// The GPT-OSS family: config.json summary for `stormo inspect`, tensor roles, and the model load.
#include "gpt_oss_family.hpp"

#include <algorithm>
#include <cmath>

#include "gpt_oss_config.hpp"
#include "gpt_oss_model.hpp"
#include "stormo/toolkit/plugin_entry.hpp"
#include "stormo/toolkit/summary.hpp"
#include "stormo/toolkit/tensor_roles.hpp"

namespace stormo::gpt_oss {

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
    // Every layer is MoE; K and V on every layer.
    return toolkit::decoder_summary(c, std::move(s.dimensions), c.n_layers,
                                    c.n_layers * 2 * static_cast<int64_t>(c.kv_width()));
}

TensorRole GptOssFamily::classify(std::string_view name) const {
    return toolkit::classify_decoder_tensor(name, {".mlp.router."});
}

Expected<std::unique_ptr<Model>> GptOssFamily::load(LoadContext& ctx) const { return GptOssModel::load(ctx); }

}  // namespace stormo::gpt_oss

STORMO_FAMILY_PLUGIN(stormo::gpt_oss::GptOssFamily, "gpt_oss", "0.1.0",
                     "GPT-OSS: GQA with sinks, sliding/full layers, YaRN RoPE, top-k MoE with clipped SwiGLU (BF16, MXFP4)",
                     "GptOssForCausalLM,gpt_oss")
