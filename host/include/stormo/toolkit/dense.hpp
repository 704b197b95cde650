#pragma once
// The dense steps every family takes the same way: the embedding lookup, RMSNorm over rows, and
// the SwiGLU MLP (Qwen3's and GLM's dense layers and shared experts, and their routed experts).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/kernels.hpp"

namespace stormo::toolkit {

// out[r] = row tokens[r] of the embedding matrix [vocab, hidden], decoded to float. An id outside
// [0, vocab) fails naming it and its position; `who` names the family.
Expected<void> embed_tokens(const Compute& c, const WeightView& embedding, std::span<const int32_t> tokens, Rows out,
                            const std::string& who);

// out[r] = rmsnorm(in[r]) * weight for every row.
void rms_norm_rows(const Compute& c, const std::vector<float>& weight, float eps, const Rows& in, Rows out);

// The RMSNorms of a pre-norm decoder: per layer input_layernorm and post_attention_layernorm, and
// the final model.norm, with one eps.
struct DecoderNorms {
    std::vector<std::vector<float>> input;           // [layer]
    std::vector<std::vector<float>> post_attention;  // [layer]
    std::vector<float> final_norm;
    float eps = 0.0f;
};
// Model::norm for a pre-norm decoder: the site picks the weight.
void build_norm(const Compute& c, const DecoderNorms& norms, Model::NormSite site, int layer, const Rows& in, Rows out);

// logits[r] = head . normed[r]. A head the integer road has no kernel for (matmul_q8: BF16 and
// other float formats) keeps float activations even where the road rounds other BF16 matrices'
// to BF16 (matmul_bf16a): the host's bounded head proves its token against the float kernel's
// logits, so these must be those logits.
void build_head(const Compute& c, const WeightView& head, const Rows& normed, Rows logits);

// down(silu(gate x) * up x): gate and up [inter, hidden], down [hidden, inter] (nn.Linear layout).
struct SwigluMlp {
    WeightView gate, up, down;
};
void build_swiglu_mlp(const Compute& c, const SwigluMlp& w, const Rows& in, Rows out);

}  // namespace stormo::toolkit
