// The toy family's synthetic checkpoint: its config.json and tensor list, with the toolkit's
// value ranges; the installed `stormo synth` writes it with no change to the host.
#include <string>

#include "stormo/toolkit/synth.hpp"
#include "toy_synth.hpp"

namespace toy {
namespace {

// The toy model's dimensions (toy_model.cpp: as many KV heads as heads, head_dim hidden / heads,
// the head tied to the embedding).
struct ToyShape {
    int64_t hidden = 64, intermediate = 128, heads = 4, vocab = 256;
};

std::string config_json(const ToyShape& s, int64_t layers) {
    auto num = [](int64_t v) { return std::to_string(v); };
    return "{\n  \"architectures\": [\"ToyForCausalLM\"],\n  \"model_type\": \"toy\",\n  \"hidden_size\": " +
           num(s.hidden) + ",\n  \"intermediate_size\": " + num(s.intermediate) + ",\n  \"num_hidden_layers\": " +
           num(layers) + ",\n  \"num_attention_heads\": " + num(s.heads) + ",\n  \"rms_norm_eps\": 1e-05,\n" +
           "  \"tie_word_embeddings\": true,\n  \"eos_token_id\": " + num(s.vocab - 1) + ",\n  \"vocab_size\": " +
           num(s.vocab) + "\n}\n";
}

std::vector<stormo::SynthTensor> tensors(const ToyShape& s, int64_t layers) {
    using stormo::DType;
    namespace tk = stormo::toolkit;
    const int64_t h = s.hidden;
    std::vector<stormo::SynthTensor> t;
    tk::add_tensor(t, "model.embed_tokens.weight", DType::BF16, {s.vocab, h}, tk::embedding_fill());
    for (int64_t l = 0; l < layers; ++l) {
        const std::string base = "model.layers." + std::to_string(l) + ".";
        tk::add_tensor(t, base + "input_layernorm.weight", DType::BF16, {h}, tk::norm_fill());
        for (const char* projection : {"q_proj", "k_proj", "v_proj"})
            tk::add_linear(t, base + "self_attn." + projection + ".weight", h, h, false);
        tk::add_linear(t, base + "self_attn.o_proj.weight", h, h, false, tk::kAttentionOutputGain);
        tk::add_tensor(t, base + "post_attention_layernorm.weight", DType::BF16, {h}, tk::norm_fill());
        tk::add_linear(t, base + "mlp.gate_proj.weight", s.intermediate, h, false);
        tk::add_linear(t, base + "mlp.up_proj.weight", s.intermediate, h, false);
        tk::add_linear(t, base + "mlp.down_proj.weight", h, s.intermediate, false);
    }
    tk::add_tensor(t, "model.norm.weight", DType::BF16, {h}, tk::norm_fill());
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
