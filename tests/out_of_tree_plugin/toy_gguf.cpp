// A GGUF file of architecture "toy" onto the toy family: "toy.*" keys as config.json fields and
// llama.cpp's tensor names (token_embd, blk.N.attn_q, ...) as transformers' names. Everything but
// the toy's own names comes from the toolkit (stormo/toolkit/gguf_mapping.hpp).
#include "toy_gguf.hpp"

#include "stormo/toolkit/gguf_mapping.hpp"

namespace toy {
namespace {

using namespace stormo;
using namespace stormo::toolkit::gguf;

struct Dims {
    uint64_t hidden = 0, layers = 0, heads = 0, inter = 0, vocab = 0;
};

Expected<Dims> read_dims(const GgufView& model, const Keys& k) {
    Dims d;
    STORMO_TRY_ASSIGN(d.hidden, k.count(k.arch_key("embedding_length")));
    STORMO_TRY_ASSIGN(d.layers, k.count(k.arch_key("block_count")));
    STORMO_TRY_ASSIGN(d.heads, k.count(k.arch_key("attention.head_count")));
    STORMO_TRY_ASSIGN(d.inter, k.count(k.arch_key("feed_forward_length")));
    if (d.heads == 0 || d.hidden % d.heads != 0)
        return tl::unexpected(k.refuse("attention.head_count", "does not divide embedding_length", ErrorKind::format));
    STORMO_TRY_ASSIGN(d.vocab, embedding_rows(model, k));
    STORMO_TRY(require_last_block(model, k, d.layers, d.layers));
    return d;
}

Expected<std::string> config_json(const GgufView& model, const Keys& k, const Dims& d, std::optional<int64_t> eos) {
    JsonObject j;
    j.raw("architectures", "[\"ToyForCausalLM\"]").text("model_type", "toy");
    j.integer("hidden_size", d.hidden).integer("num_hidden_layers", d.layers).integer("vocab_size", d.vocab);
    j.integer("num_attention_heads", d.heads).integer("intermediate_size", d.inter);
    STORMO_TRY(add_common_fields(j, model, k, Yarn::refuse, eos));
    return j.str();
}

}  // namespace

Expected<GgufMappedModel> map_toy_gguf(const GgufView& model) {
    const Keys k(model);
    STORMO_TRY_ASSIGN(const Dims d, read_dims(model, k));
    STORMO_TRY_ASSIGN(MappedModel m, mapped_config(k, d.vocab, [&](auto eos) { return config_json(model, k, d, eos); }));
    const uint64_t H = d.hidden, I = d.inter;
    STORMO_TRY(copy_ends(model, m, H, d.vocab));
    for (int l = 0; l < static_cast<int>(d.layers); ++l) {
        STORMO_TRY(copy_layer_norms(model, m, l, H, "ffn_norm"));
        for (const auto& [g, h] : {std::pair{"attn_q", "q_proj"}, {"attn_k", "k_proj"}, {"attn_v", "v_proj"}, {"attn_output", "o_proj"}})
            STORMO_TRY(copy_tensor(model, m, blk(l, std::string(g) + ".weight"), hf(l, std::string("self_attn.") + h + ".weight"), {H, H}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "ffn_gate.weight"), hf(l, "mlp.gate_proj.weight"), {H, I}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "ffn_up.weight"), hf(l, "mlp.up_proj.weight"), {H, I}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "ffn_down.weight"), hf(l, "mlp.down_proj.weight"), {I, H}));
    }
    return m;
}

}  // namespace toy
