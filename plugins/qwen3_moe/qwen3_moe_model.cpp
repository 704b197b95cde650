// Qwen3-MoE loading (every resident tensor declared with its exact shape from config.json) and the
// per-layer steps, built on the family toolkit.
#include "qwen3_moe_model.hpp"

#include <cmath>

#include "stormo/toolkit/loading.hpp"
#include "stormo/toolkit/experts.hpp"
#include "tensor_names.hpp"

namespace stormo::qwen3_moe {
namespace {

// The hub's Qwen3-MoE checkpoints are BF16 (and, for the -FP8 ones, block-scaled F8_E4M3
// matrices); F32 and F16 are accepted as the same values at another width.
const std::vector<DType> kMatrixDtypes = {DType::BF16, DType::F32, DType::F16};
const std::vector<DType> kVectorDtypes = {DType::BF16, DType::F32, DType::F16};


}  // namespace

std::vector<KvBufferDecl> layer_kv(const Qwen3MoeConfig& c, int) {
    return toolkit::gqa_kv_buffers(toolkit::gqa_shape(c), 0);  // every layer attends over the whole context
}

Qwen3MoeModel::Qwen3MoeModel(Qwen3MoeConfig cfg, Compute compute)
    : DecoderModel(compute, "qwen3_moe", static_cast<size_t>(cfg.hidden_size), static_cast<size_t>(cfg.vocab_size),
                   static_cast<size_t>(cfg.n_layers), static_cast<float>(cfg.rms_norm_eps)),
      cfg_(std::move(cfg)) {
    attention_options_.shape = toolkit::gqa_shape(cfg_);
    // transformers: self.scaling = head_dim ** -0.5, a Python double rounded to float where it
    // meets the float32 scores.
    attention_options_.scale = static_cast<float>(std::pow(static_cast<double>(cfg_.head_dim), -0.5));
    attention_options_.rope = &rope_;
    attention_options_.who = "qwen3_moe";
    router_spec_.rule = toolkit::RouterRule::softmax_then_topk;
    router_spec_.top_k = static_cast<size_t>(cfg_.top_k);
    router_spec_.renormalize = cfg_.norm_topk_prob;
}

Expected<std::unique_ptr<Model>> Qwen3MoeModel::load(LoadContext& ctx) {
    STORMO_TRY_ASSIGN(Qwen3MoeConfig cfg, parse_qwen3_moe_config(ctx.config()));
    STORMO_TRY_ASSIGN(const toolkit::Fp8Blocks fp8, toolkit::read_fp8_quantization(ctx.config(), "qwen3_moe"));
    STORMO_TRY_ASSIGN(const Compute compute, toolkit::load_compute(ctx, "qwen3_moe"));
    // The counts that size the model are checked against the checkpoint first.
    STORMO_TRY(toolkit::require_last_layer(ctx, cfg.n_layers, names::layer(static_cast<int>(cfg.n_layers) - 1) + "input_layernorm.weight"));
    std::unique_ptr<Qwen3MoeModel> model(new Qwen3MoeModel(std::move(cfg), compute));
    model->fp8_ = fp8;
    model->layers_.resize(static_cast<size_t>(model->cfg_.n_layers));
    toolkit::TensorLoader load(ctx, model->resident_, kMatrixDtypes, kVectorDtypes, fp8);
    STORMO_TRY(model->load_weights(load, {names::kEmbedding, names::kHead, names::kFinalNorm},
                                   model->cfg_.tie_word_embeddings, [&](int l) { return model->load_layer(ctx, l); }));
    // Sized by head_dim, so made once the q/k/v shapes have confirmed it.
    model->rope_ = toolkit::Rope(model->cfg_.rope, static_cast<int>(model->cfg_.head_dim));
    return std::unique_ptr<Model>(std::move(model));
}

Expected<void> Qwen3MoeModel::load_layer(LoadContext& ctx, int l) {
    toolkit::TensorLoader load(ctx, resident_, kMatrixDtypes, kVectorDtypes, fp8_);
    LayerWeights& w = layers_[static_cast<size_t>(l)];
    const int64_t hidden = cfg_.hidden_size, hd = cfg_.head_dim;
    const float eps = static_cast<float>(cfg_.rms_norm_eps);
    STORMO_TRY(toolkit::load_layer_norms(load, names::layer(l), l, hidden, norms_));
    STORMO_TRY(toolkit::load_gqa_projections(load, names::layer(l) + "self_attn", attention_options_.shape, hidden,
                                             cfg_.attention_bias, w.attn));
    STORMO_TRY_ASSIGN(w.attn.q_norm.weight, load.vector(names::attention(l, "q_norm.weight"), TensorRole::norm, hd));
    STORMO_TRY_ASSIGN(w.attn.k_norm.weight, load.vector(names::attention(l, "k_norm.weight"), TensorRole::norm, hd));
    w.attn.q_norm.eps = eps;
    w.attn.k_norm.eps = eps;

    LayerPlan& plan = plans_[static_cast<size_t>(l)];
    plan.kv = layer_kv(cfg_, l);
    plan.shared_experts = false;
    if (!cfg_.is_moe(l)) {
        const int64_t inter = cfg_.intermediate_size;
        plan.ffn = FfnKind::dense;
        STORMO_TRY_ASSIGN(w.mlp.gate, load.matrix(names::dense_mlp(l, "gate_proj"), TensorRole::dense_ffn, inter, hidden));
        STORMO_TRY_ASSIGN(w.mlp.up, load.matrix(names::dense_mlp(l, "up_proj"), TensorRole::dense_ffn, inter, hidden));
        STORMO_TRY_ASSIGN(w.mlp.down, load.matrix(names::dense_mlp(l, "down_proj"), TensorRole::dense_ffn, hidden, inter));
        return {};
    }
    plan.ffn = FfnKind::moe;
    plan.n_experts = static_cast<int>(cfg_.n_experts);
    plan.top_k = static_cast<int>(cfg_.top_k);
    STORMO_TRY_ASSIGN(w.router.weight, load.matrix(names::router(l), TensorRole::router, cfg_.n_experts, hidden));
    plan.expert_parts = toolkit::swiglu_expert_parts(ctx, [l](const char* projection) { return names::expert(l, projection); },
                                                     cfg_.hidden_size, cfg_.moe_intermediate_size, kMatrixDtypes, fp8_);
    return ctx.declare_experts(l, plan.expert_parts, plan.n_experts);
}

// GQA without biases (unless attention_bias), QK-norm per head before RoPE, full causal attention.
Expected<void> Qwen3MoeModel::attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const {
    return toolkit::build_gqa_attention(compute_, layer, ctx, layers_.at(static_cast<size_t>(layer)).attn,
                                        attention_options_, normed, kv, out);
}

// Router: softmax over every expert's logit, top-k in torch.topk's order, renormalised over the k
// when norm_topk_prob.
Routing Qwen3MoeModel::route(int layer, const StepContext& ctx, const Rows& normed) const {
    return toolkit::build_router(compute_, layer, ctx, layers_.at(static_cast<size_t>(layer)).router, router_spec_,
                                 normed);
}

Expected<void> Qwen3MoeModel::expert_ffn(int, const ExpertView& expert, const Rows& in, Rows out) const {
    return toolkit::build_swiglu_expert(compute_, expert, static_cast<size_t>(cfg_.hidden_size),
                                        static_cast<size_t>(cfg_.moe_intermediate_size), fp8_, "qwen3_moe", in, out);
}

Expected<void> Qwen3MoeModel::dense_ffn(int layer, const Rows& in, Rows out) const {
    if (cfg_.is_moe(layer))
        return fail(ErrorKind::internal, "qwen3_moe layer " + std::to_string(layer) + " is MoE and has no dense MLP");
    toolkit::build_swiglu_mlp(compute_, layers_.at(static_cast<size_t>(layer)).mlp, in, out);
    return {};
}

}  // namespace stormo::qwen3_moe
