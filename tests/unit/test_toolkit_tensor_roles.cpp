// The toolkit's tensor roles by checkpoint name, on the names the three families' checkpoints
// hold: each family names only its router's parts; norms are found by their module's name.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "stormo/toolkit/tensor_roles.hpp"

namespace stormo::toolkit {
namespace {

TEST(ToolkitTensorRoles, DecoderNamesGetTheirRoles) {
    const auto glm = [](const char* n) { return classify_decoder_tensor(n, {".mlp.gate."}); };
    EXPECT_EQ(glm("model.embed_tokens.weight"), TensorRole::embedding);
    EXPECT_EQ(glm("lm_head.weight"), TensorRole::head);
    EXPECT_EQ(glm("model.norm.weight"), TensorRole::norm);
    EXPECT_EQ(glm("model.layers.1.mlp.experts.3.up_proj.weight"), TensorRole::experts);
    EXPECT_EQ(glm("model.layers.1.mlp.gate.e_score_correction_bias"), TensorRole::router);
    EXPECT_EQ(glm("model.layers.1.mlp.shared_experts.gate_proj.weight"), TensorRole::dense_ffn);
    EXPECT_EQ(glm("model.layers.0.mlp.gate_proj.weight"), TensorRole::dense_ffn);
    EXPECT_EQ(glm("model.layers.0.self_attn.q_a_layernorm.weight"), TensorRole::norm);
    EXPECT_EQ(glm("model.layers.0.self_attn.indexer.k_norm.bias"), TensorRole::norm);
    EXPECT_EQ(glm("model.layers.0.self_attn.kv_b_proj.weight"), TensorRole::attention);
    EXPECT_EQ(glm("model.layers.4.eh_proj.weight"), TensorRole::other);
    EXPECT_EQ(glm("model.rotary_emb.inv_freq"), TensorRole::other);

    const auto gpt_oss = [](const char* n) { return classify_decoder_tensor(n, {".mlp.router."}); };
    EXPECT_EQ(gpt_oss("model.layers.2.mlp.router.bias"), TensorRole::router);
    EXPECT_EQ(gpt_oss("model.layers.2.mlp.experts.gate_up_proj_blocks"), TensorRole::experts);
    EXPECT_EQ(gpt_oss("model.layers.2.self_attn.sinks"), TensorRole::attention);
    EXPECT_EQ(gpt_oss("model.layers.2.post_attention_layernorm.weight"), TensorRole::norm);

    const auto qwen3 = [](const char* n) { return classify_decoder_tensor(n, {".mlp.gate.", ".mlp.shared_expert_gate."}); };
    EXPECT_EQ(qwen3("model.layers.0.mlp.shared_expert_gate.weight"), TensorRole::router);
    EXPECT_EQ(qwen3("model.layers.0.self_attn.k_norm.weight"), TensorRole::norm);
}

TEST(ToolkitTensorRoles, ANormIsAModuleEndingInNorm) {
    EXPECT_TRUE(is_norm_parameter("model.layers.0.input_layernorm.weight"));
    EXPECT_TRUE(is_norm_parameter("model.norm.weight"));
    EXPECT_FALSE(is_norm_parameter("model.layers.0.self_attn.q_proj.weight"));
    EXPECT_FALSE(is_norm_parameter("norm"));
}

// Multi-token-prediction layers follow the decoder's: the summary names them as draft layers, and
// every tensor under them is a draft tensor whatever its family would call it (layer 4's experts
// here), while the decoder's own layers keep their roles.
class GlmNames final : public Family {
public:
    Expected<ModelSummary> summarize(const ModelConfig&) const override { return ModelSummary{}; }
    TensorRole classify(std::string_view n) const override { return classify_decoder_tensor(n, {".mlp.gate."}); }
    Expected<std::unique_ptr<Model>> load(LoadContext&) const override {
        return fail(ErrorKind::unsupported, "names only");
    }
};

TEST(ToolkitTensorRoles, DraftLayersFollowTheDecodersAndOutrankTheFamilysRoles) {
    EXPECT_EQ(decoder_layer_prefixes(61, 1), (std::vector<std::string>{"model.layers.61."}));
    EXPECT_EQ(decoder_layer_prefixes(4, 2), (std::vector<std::string>{"model.layers.4.", "model.layers.5."}));
    EXPECT_TRUE(decoder_layer_prefixes(4, 0).empty());
    ModelSummary summary;
    summary.draft_layers = decoder_layer_prefixes(4, 1);
    const GlmNames family;
    EXPECT_EQ(tensor_role(family, summary, "model.layers.4.mlp.experts.3.up_proj.weight"), TensorRole::draft);
    EXPECT_EQ(tensor_role(family, summary, "model.layers.4.eh_proj.weight"), TensorRole::draft);
    EXPECT_EQ(tensor_role(family, summary, "model.layers.40.mlp.experts.3.up_proj.weight"), TensorRole::experts);
    EXPECT_EQ(tensor_role(family, summary, "model.layers.3.mlp.experts.3.up_proj.weight"), TensorRole::experts);
    EXPECT_EQ(tensor_role(family, ModelSummary{}, "model.layers.4.eh_proj.weight"), TensorRole::other);
    EXPECT_STREQ(tensor_role_name(TensorRole::draft), "draft");
}

}  // namespace
}  // namespace stormo::toolkit
