// GPT-OSS loading (every resident tensor declared with its exact shape from config.json) and the
// per-layer steps, built on the family toolkit.
#include "gpt_oss_model.hpp"

#include <cmath>

#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/loading.hpp"
#include "tensor_names.hpp"

namespace stormo::gpt_oss {
namespace {

// Every GPT-OSS checkpoint stores its non-quantized tensors in BF16; a GGUF file holds F32, F16
// or BF16 (and its block types, which the toolkit's loader adds for matrices). Another dtype
// means a different (or damaged) checkpoint and is refused by name.
const std::vector<DType> kFloat = {DType::BF16, DType::F32, DType::F16};

toolkit::TensorLoader loader(LoadContext& ctx, std::vector<Tensor>& keep) { return {ctx, keep, kFloat, kFloat}; }

}  // namespace

std::vector<KvBufferDecl> layer_kv(const GptOssConfig& c, int layer) {
    return toolkit::gqa_kv_buffers(toolkit::gqa_shape(c), c.window_of(layer));
}

GptOssModel::GptOssModel(GptOssConfig cfg, Compute compute)
    : DecoderModel(compute, "gpt_oss", static_cast<size_t>(cfg.hidden_size), static_cast<size_t>(cfg.vocab_size),
                   static_cast<size_t>(cfg.n_layers), static_cast<float>(cfg.rms_norm_eps)),
      cfg_(std::move(cfg)) {
    for (int l = 0; l < cfg_.n_layers; ++l) {
        toolkit::GqaOptions o;
        o.shape = toolkit::gqa_shape(cfg_);
        // transformers: self.head_dim ** -0.5, a Python double, rounded to float where it meets the scores.
        o.scale = static_cast<float>(std::pow(static_cast<double>(cfg_.head_dim), -0.5));
        o.window = cfg_.window_of(l);
        o.rope = &rope_;
        o.who = "gpt_oss";
        attention_options_.push_back(std::move(o));
    }
    router_spec_.rule = toolkit::RouterRule::topk_then_softmax;
    router_spec_.top_k = static_cast<size_t>(cfg_.top_k);
}

Expected<std::unique_ptr<Model>> GptOssModel::load(LoadContext& ctx) {
    STORMO_TRY_ASSIGN(GptOssConfig cfg, parse_gpt_oss_config(ctx.config()));
    STORMO_TRY_ASSIGN(const Compute compute, toolkit::load_compute(ctx, "gpt_oss"));
    // The counts that size the model are checked against the checkpoint first.
    STORMO_TRY(toolkit::require_last_layer(ctx, cfg.n_layers, names::layer(static_cast<int>(cfg.n_layers) - 1) + "input_layernorm.weight"));
    std::unique_ptr<GptOssModel> model(new GptOssModel(std::move(cfg), compute));
    model->layers_.resize(static_cast<size_t>(model->cfg_.n_layers));
    auto load = loader(ctx, model->resident_);
    STORMO_TRY(model->load_weights(load, {names::kEmbedding, names::kHead, names::kFinalNorm},
                                   model->cfg_.tie_word_embeddings, [&](int l) { return model->load_layer(ctx, l); }));
    // Sized by head_dim, so made once the q/k/v shapes have confirmed it.
    model->rope_ = toolkit::Rope(model->cfg_.rope, static_cast<int>(model->cfg_.head_dim));
    return std::unique_ptr<Model>(std::move(model));
}

Expected<void> GptOssModel::load_layer(LoadContext& ctx, int l) {
    auto load = loader(ctx, resident_);
    LayerWeights& w = layers_[static_cast<size_t>(l)];
    const int64_t hidden = cfg_.hidden_size, experts = cfg_.n_experts;
    STORMO_TRY(toolkit::load_layer_norms(load, names::layer(l), l, hidden, norms_));
    STORMO_TRY(toolkit::load_gqa_projections(load, names::layer(l) + "self_attn",
                                             attention_options_[static_cast<size_t>(l)].shape, hidden,
                                             cfg_.attention_bias, w.attn));
    STORMO_TRY_ASSIGN(w.attn.sinks, load.vector(names::attention(l, "sinks"), TensorRole::attention, cfg_.n_heads));
    STORMO_TRY_ASSIGN(w.router.weight, load.matrix(names::router(l, "weight"), TensorRole::router, experts, hidden));
    STORMO_TRY_ASSIGN(w.router.bias, load.vector(names::router(l, "bias"), TensorRole::router, experts));
    STORMO_TRY_ASSIGN(w.experts, layer_expert_form(cfg_, ctx, l));

    LayerPlan& plan = plans_[static_cast<size_t>(l)];
    plan.kv = layer_kv(cfg_, l);
    plan.ffn = FfnKind::moe;  // every GPT-OSS layer is MoE; dense_ffn is never planned
    plan.n_experts = static_cast<int>(cfg_.n_experts);
    plan.top_k = static_cast<int>(cfg_.top_k);
    plan.shared_experts = false;
    plan.expert_parts = expert_part_decls(cfg_, l, w.experts);
    return ctx.declare_experts(l, plan.expert_parts, plan.n_experts);
}

// GQA with biases, split-half YaRN RoPE, a learned sink per head, sliding or full per layer.
Expected<void> GptOssModel::attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const {
    const size_t l = static_cast<size_t>(layer);
    return toolkit::build_gqa_attention(compute_, layer, ctx, layers_.at(l).attn, attention_options_.at(l), normed, kv, out);
}

// Router: logits = W x + b over all experts; the top-k logits in torch.topk's order; the weights
// are a softmax over those k only.
Routing GptOssModel::route(int layer, const StepContext& ctx, const Rows& normed) const {
    return toolkit::build_router(compute_, layer, ctx, layers_.at(static_cast<size_t>(layer)).router, router_spec_,
                                 normed);
}

Expected<void> GptOssModel::dense_ffn(int layer, const Rows&, Rows) const {
    return fail(ErrorKind::internal, "gpt_oss layer " + std::to_string(layer) + " has no dense FFN");
}

}  // namespace stormo::gpt_oss
