// The toy family's synthetic checkpoint: its config.json and tensor list, with the toolkit's
// value ranges; the installed `stormo synth` writes it with no change to the host.
#include <string>

#include "stormo/toolkit/synth.hpp"
#include "toy_family.hpp"

namespace toy {
namespace {

struct ToyShape {
    int64_t hidden = 64, intermediate = 128, heads = 4, kv_heads = 2, head_dim = 16, vocab = 256;
};

std::string config_json(const ToyShape& s, int64_t layers) {
    auto num = [](int64_t v) { return std::to_string(v); };
    return "{\n  \"architectures\": [\"ToyForCausalLM\"],\n  \"model_type\": \"toy\",\n  \"hidden_size\": " +
           num(s.hidden) + ",\n  \"intermediate_size\": " + num(s.intermediate) + ",\n  \"num_hidden_layers\": " +
           num(layers) + ",\n  \"num_attention_heads\": " + num(s.heads) + ",\n  \"num_key_value_heads\": " +
           num(s.kv_heads) + ",\n  \"head_dim\": " + num(s.head_dim) + ",\n  \"rms_norm_eps\": 1e-05,\n" +
           "  \"rope_theta\": 10000.0,\n  \"eos_token_id\": " + num(s.vocab - 1) + ",\n  \"vocab_size\": " +
           num(s.vocab) + "\n}\n";
}

std::vector<stormo::SynthTensor> tensors(const ToyShape& s, int64_t layers) {
    using stormo::DType;
    namespace tk = stormo::toolkit;
    const int64_t h = s.hidden, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    std::vector<stormo::SynthTensor> t;
    tk::add_tensor(t, "model.embed_tokens.weight", DType::BF16, {s.vocab, h}, tk::embedding_fill());
    for (int64_t l = 0; l < layers; ++l) {
        const std::string base = "model.layers." + std::to_string(l) + ".";
        tk::add_tensor(t, base + "input_layernorm.weight", DType::BF16, {h}, tk::norm_fill());
        tk::add_linear(t, base + "self_attn.q_proj.weight", q, h, false);
        tk::add_linear(t, base + "self_attn.k_proj.weight", kv, h, false);
        tk::add_linear(t, base + "self_attn.v_proj.weight", kv, h, false);
        tk::add_linear(t, base + "self_attn.o_proj.weight", h, q, false, tk::kAttentionOutputGain);
        tk::add_tensor(t, base + "post_attention_layernorm.weight", DType::BF16, {h}, tk::norm_fill());
        tk::add_linear(t, base + "mlp.gate_proj.weight", s.intermediate, h, false);
        tk::add_linear(t, base + "mlp.up_proj.weight", s.intermediate, h, false);
        tk::add_linear(t, base + "mlp.down_proj.weight", h, s.intermediate, false);
    }
    tk::add_tensor(t, "model.norm.weight", DType::BF16, {h}, tk::norm_fill());
    tk::add_linear(t, "lm_head.weight", s.vocab, h, false);
    return t;
}

}  // namespace

std::vector<stormo::SynthPreset> synth_presets() {
    return {{"toy-tiny", "the out-of-tree toy family: 2 dense layers, hidden 64, vocab 256 (~0.2 MB)", 2, 0, 0}};
}

stormo::Expected<stormo::SynthCheckpoint> synth_checkpoint(const stormo::SynthRequest& request) {
    if (request.preset != "toy-tiny")
        return stormo::fail(stormo::ErrorKind::invalid_argument, "toy: no synth preset \"" + request.preset + "\"");
    const ToyShape shape;
    return stormo::SynthCheckpoint{config_json(shape, request.layers),
                                   "{\n  \"eos_token_id\": " + std::to_string(shape.vocab - 1) + "\n}\n",
                                   tensors(shape, request.layers)};
}

}  // namespace toy
