// llama.cpp's "gpt-oss" architecture (its openai-moe model) onto the gpt_oss family: the config
// transformers' GptOssConfig would hold, and the tensors under transformers' names and layouts.
// llama.cpp's converter (conversion/gpt_oss.py) split the interleaved gate_up experts into
// ffn_gate_exps / ffn_up_exps and transposed the expert matrices to [E, out, in]. The family
// takes that form as it is (stacked nn.Linear experts "mlp.experts.{gate,up,down}_proj.weight"
// [E, out, in] with ".bias" [E, out], plugins/gpt_oss/experts.cpp), so the experts are handed
// over in the file's own blocks and stream from the file like a safetensors checkpoint's.
#include <string>

#include "gpt_oss_family.hpp"
#include "stormo/quote.hpp"
#include "stormo/toolkit/gguf_mapping.hpp"

namespace stormo::gpt_oss {
namespace {

using namespace toolkit::gguf;

// llama.cpp runs every gpt-oss file with the SwiGLU limit of the released models (a constant in
// llama-graph.cpp, LLM_FFN_SWIGLU_OAI_MOE); GGUF carries no key for it.
constexpr double kSwigluLimit = 7.0;
// llama.cpp's default period of sliding layers for this architecture (layer l slides when
// l % period < period - 1: every even layer), used when the file has no sliding_window_pattern.
constexpr uint64_t kDefaultSwaPeriod = 2;

struct Dims {
    uint64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, inter = 0, experts = 0, top_k = 0,
             vocab = 0, window = 0, period = kDefaultSwaPeriod;
};

Expected<Dims> read_dims(const GgufView& model, const Keys& k) {
    Dims d;
    STORMO_TRY_ASSIGN(d.hidden, k.count(k.arch_key("embedding_length")));
    STORMO_TRY_ASSIGN(d.layers, k.count(k.arch_key("block_count")));
    STORMO_TRY_ASSIGN(d.heads, k.count(k.arch_key("attention.head_count")));
    STORMO_TRY_ASSIGN(d.kv_heads, k.count(k.arch_key("attention.head_count_kv")));
    STORMO_TRY_ASSIGN(d.head_dim, k.count(k.arch_key("attention.key_length")));
    STORMO_TRY_ASSIGN(const uint64_t value_length, k.count(k.arch_key("attention.value_length")));
    if (value_length != d.head_dim)
        return fail(ErrorKind::unsupported, k.path() + ": attention.key_length " + std::to_string(d.head_dim) +
                                                " and value_length " + std::to_string(value_length) + " differ (gpt_oss needs one head_dim)");
    STORMO_TRY_ASSIGN(d.inter, k.count(k.arch_key("expert_feed_forward_length")));
    STORMO_TRY_ASSIGN(d.experts, k.count(k.arch_key("expert_count")));
    STORMO_TRY_ASSIGN(d.top_k, k.count(k.arch_key("expert_used_count")));
    STORMO_TRY_ASSIGN(d.window, k.count(k.arch_key("attention.sliding_window")));
    if (const GgufValue* p = k.find(k.arch_key("attention.sliding_window_pattern"))) {
        auto period = p->as_uint();
        if (!period)
            return fail(ErrorKind::unsupported, k.path() + ": key " + in_quotes(k.arch_key("attention.sliding_window_pattern")) +
                                                    " is " + p->type_name() + "; only a period (an integer) is supported");
        d.period = *period;
    }
    STORMO_TRY_ASSIGN(d.vocab, embedding_rows(model, k));
    // Last: the keys above are read and checked without sizing anything by them.
    STORMO_TRY(require_last_block(model, k, d.layers, d.layers));
    return d;
}

Expected<std::string> config_json(const GgufView& model, const Keys& k, const Dims& d, std::optional<int64_t> eos) {
    std::string layer_types = "[";
    for (uint64_t l = 0; l < d.layers; ++l) {
        const bool sliding = d.period == 0 || l % d.period < d.period - 1;
        layer_types += std::string(l ? ", " : "") + (sliding ? "\"sliding_attention\"" : "\"full_attention\"");
    }
    layer_types += "]";

    JsonObject j;
    j.raw("architectures", "[\"GptOssForCausalLM\"]").text("model_type", "gpt_oss");
    j.integer("hidden_size", d.hidden).integer("intermediate_size", d.inter).integer("num_hidden_layers", d.layers);
    j.integer("num_attention_heads", d.heads).integer("num_key_value_heads", d.kv_heads).integer("head_dim", d.head_dim);
    j.integer("vocab_size", d.vocab).integer("num_local_experts", d.experts).integer("num_experts_per_tok", d.top_k);
    j.raw("layer_types", layer_types).integer("sliding_window", d.window).number("swiglu_limit", kSwigluLimit);
    j.flag("attention_bias", model.tensor(blk(0, "attn_q.bias")) != nullptr);
    // YaRN's truncate false: the released gpt-oss models' config.json says so and transformers
    // follows it; llama.cpp always floors and ceils the ramp bounds (docs/gguf.md).
    STORMO_TRY(add_common_fields(j, model, k, Yarn::no_truncate, eos));
    return j.str();
}

Expected<MappedModel> map_gpt_oss(const GgufView& model, const Keys& k) {
    STORMO_TRY_ASSIGN(const Dims d, read_dims(model, k));
    STORMO_TRY_ASSIGN(MappedModel m, mapped_config(k, d.vocab, [&](auto eos) { return config_json(model, k, d, eos); }));

    const auto H = d.hidden, V = d.vocab, E = d.experts, I = d.inter;
    const auto q_width = d.heads * d.head_dim, kv_width = d.kv_heads * d.head_dim;
    STORMO_TRY(copy_ends(model, m, H, V));
    const bool bias = model.tensor(blk(0, "attn_q.bias")) != nullptr;
    for (int l = 0; l < static_cast<int>(d.layers); ++l) {
        STORMO_TRY(copy_layer_norms(model, m, l, H, "post_attention_norm"));
        const std::pair<const char*, const char*> projections[] = {
            {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"}, {"attn_v", "self_attn.v_proj"}, {"attn_output", "self_attn.o_proj"}};
        for (const auto& [g, h] : projections) {
            const std::string gs(g), hs(h);
            const uint64_t in = gs == "attn_output" ? q_width : H;
            const uint64_t out = gs == "attn_q" ? q_width : gs == "attn_output" ? H : kv_width;
            STORMO_TRY(copy_tensor(model, m, blk(l, gs + ".weight"), hf(l, hs + ".weight"), {in, out}));
            if (bias) STORMO_TRY(copy_tensor(model, m, blk(l, gs + ".bias"), hf(l, hs + ".bias"), {out}));
        }
        STORMO_TRY(copy_tensor(model, m, blk(l, "attn_sinks.weight"), hf(l, "self_attn.sinks"), {d.heads}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "ffn_gate_inp.weight"), hf(l, "mlp.router.weight"), {H, E}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "ffn_gate_inp.bias"), hf(l, "mlp.router.bias"), {E}));

        for (const char* projection : {"gate", "up"}) {
            const std::string g = std::string("ffn_") + projection + "_exps", h = std::string("mlp.experts.") + projection + "_proj";
            STORMO_TRY(copy_tensor(model, m, blk(l, g + ".weight"), hf(l, h + ".weight"), {H, I, E}));
            STORMO_TRY(copy_tensor(model, m, blk(l, g + ".bias"), hf(l, h + ".bias"), {I, E}));
        }
        STORMO_TRY(copy_tensor(model, m, blk(l, "ffn_down_exps.weight"), hf(l, "mlp.experts.down_proj.weight"), {I, H, E}));
        STORMO_TRY(copy_tensor(model, m, blk(l, "ffn_down_exps.bias"), hf(l, "mlp.experts.down_proj.bias"), {H, E}));
    }
    return m;
}

}  // namespace

std::vector<std::string> GptOssFamily::gguf_architectures() const { return {"gpt-oss"}; }

Expected<GgufMappedModel> GptOssFamily::map_gguf(const GgufView& file) const { return map_gpt_oss(file, Keys(file)); }

}  // namespace stormo::gpt_oss
