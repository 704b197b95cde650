// DeepSeek-V3 loading (every resident tensor declared with its exact shape from config.json) and
// the simple steps: router, experts, dense MLP and shared experts.
#include "deepseek_v3_model.hpp"

#include "stormo/toolkit/experts.hpp"
#include "stormo/toolkit/mtp.hpp"
#include "tensor_names.hpp"

namespace stormo::deepseek_v3 {
namespace {

// deepseek-ai's checkpoints are block-scaled F8_E4M3 (their scales read by the loader) with BF16
// norms and embeddings; BF16 copies (the dequantized ones, moonshotai's) and F32 / F16 hold the
// same values at another width. e_score_correction_bias is F32 (transformers keeps it in float32).
const std::vector<DType> kMatrixDtypes = {DType::BF16, DType::F32, DType::F16};
const std::vector<DType> kVectorDtypes = {DType::BF16, DType::F32, DType::F16};

}  // namespace

std::vector<KvBufferDecl> layer_kv(const DeepseekV3Config& c, int) {
    return toolkit::mla_kv_buffers(toolkit::mla_shape(c));
}

DeepseekV3Model::DeepseekV3Model(DeepseekV3Config cfg, Compute compute)
    : DecoderModel(compute, "deepseek_v3", static_cast<size_t>(cfg.hidden_size), static_cast<size_t>(cfg.vocab_size),
                   static_cast<size_t>(cfg.n_layers), static_cast<float>(cfg.rms_norm_eps)),
      cfg_(std::move(cfg)),
      rope_(cfg_.rope, static_cast<int>(cfg_.qk_rope_head_dim)) {
    mla_options_.shape = toolkit::mla_shape(cfg_);
    mla_options_.rope = &rope_;
    mla_options_.rope_layout = cfg_.rope_interleave ? toolkit::MlaRopeLayout::interleaved
                                                    : toolkit::MlaRopeLayout::split_half;
    mla_options_.scale = static_cast<float>(softmax_scale(cfg_));
    mla_options_.who = "deepseek_v3";
    router_spec_ = toolkit::sigmoid_router_spec(cfg_);
}

Expected<std::unique_ptr<Model>> DeepseekV3Model::load(LoadContext& ctx) {
    STORMO_TRY_ASSIGN(DeepseekV3Config cfg, parse_deepseek_v3_config(ctx.config()));
    STORMO_TRY_ASSIGN(const toolkit::Fp8Blocks fp8, toolkit::read_fp8_quantization(ctx.config(), "deepseek_v3"));
    STORMO_TRY_ASSIGN(const Compute compute, toolkit::load_compute(ctx, "deepseek_v3"));
    std::unique_ptr<DeepseekV3Model> model(new DeepseekV3Model(std::move(cfg), compute));
    model->fp8_ = fp8;
    model->layers_.resize(static_cast<size_t>(model->cfg_.n_layers));
    toolkit::TensorLoader load(ctx, model->resident_, kMatrixDtypes, kVectorDtypes, fp8);
    STORMO_TRY(model->load_weights(load, {names::kEmbedding, names::kHead, names::kFinalNorm},
                                   model->cfg_.tie_word_embeddings, [&](int l) { return model->load_layer(ctx, l); }));
    return std::unique_ptr<Model>(std::move(model));
}

Expected<std::unique_ptr<DraftModel>> DeepseekV3Model::load_draft(LoadContext& ctx, const Model& main, int index) {
    STORMO_TRY_ASSIGN(DeepseekV3Config cfg, parse_deepseek_v3_config(ctx.config()));
    STORMO_TRY(toolkit::check_mtp_index(index, cfg.mtp_layers, "deepseek_v3"));
    STORMO_TRY_ASSIGN(const toolkit::Fp8Blocks fp8, toolkit::read_fp8_quantization(ctx.config(), "deepseek_v3"));
    STORMO_TRY_ASSIGN(const Compute compute, toolkit::load_compute(ctx, "deepseek_v3"));
    const int layer = static_cast<int>(cfg.n_layers) + index;
    // The body: this model with layers [0, layer) left empty (plans without KV, never run) and
    // the MTP layer's decoder layer loaded by the main layers' own loader.
    DeepseekV3Config body_cfg = cfg;
    body_cfg.n_layers = layer + 1;
    std::unique_ptr<DeepseekV3Model> body(new DeepseekV3Model(std::move(body_cfg), compute));
    body->fp8_ = fp8;
    body->layers_.resize(static_cast<size_t>(layer) + 1);
    STORMO_TRY(body->load_layer(ctx, layer));
    toolkit::MtpSpec spec;
    spec.prefix = names::layer(layer);
    spec.layer = layer;
    spec.hidden = cfg.hidden_size;
    spec.vocab = cfg.vocab_size;
    spec.rms_norm_eps = static_cast<float>(cfg.rms_norm_eps);
    spec.carries_normed = false;  // DeepSeek-V3 carries the raw layer output g into the next chained step (family_deepseek_v3.md)
    spec.who = "deepseek_v3";
    spec.matrix_dtypes = kMatrixDtypes;
    spec.vector_dtypes = kVectorDtypes;
    spec.fp8 = fp8;
    return toolkit::load_mtp_draft(ctx, compute, std::move(body), main, spec);
}

Expected<void> DeepseekV3Model::load_layer(LoadContext& ctx, int l) {
    toolkit::TensorLoader load(ctx, resident_, kMatrixDtypes, kVectorDtypes, fp8_);
    LayerWeights& w = layers_[static_cast<size_t>(l)];
    const int64_t hidden = cfg_.hidden_size;
    STORMO_TRY(toolkit::load_layer_norms(load, names::layer(l), l, hidden, norms_));
    STORMO_TRY(toolkit::load_mla(load, names::attention_module(l), mla_options_.shape, hidden, *compute_.table, w.mla));

    LayerPlan& plan = plans_[static_cast<size_t>(l)];
    plan.kv = layer_kv(cfg_, l);
    const toolkit::SigmoidMoeShape ffn{hidden, cfg_.intermediate_size, cfg_.moe_intermediate_size, cfg_.n_shared_experts,
                                      cfg_.n_experts, cfg_.top_k};
    return toolkit::load_sigmoid_moe_ffn(load, ctx, names::mlp(l, ""), l, cfg_.is_moe_layer(l), ffn, kMatrixDtypes, fp8_,
                                         w.ffn, plan);
}

// Router (DeepseekV3TopkRouter, noaux_tc): sigmoid scores; the correction bias only chooses, within
// the topk_group best of n_group groups; the weights are the chosen sigmoids, renormalised
// (norm_topk_prob) and scaled (routed_scaling_factor).
Routing DeepseekV3Model::route(int layer, const StepContext& ctx, const Rows& normed) const {
    return toolkit::build_router(compute_, layer, ctx, layers_.at(static_cast<size_t>(layer)).ffn.router, router_spec_,
                                 normed);
}

Expected<void> DeepseekV3Model::expert_ffn(int, const ExpertView& expert, const Rows& in, Rows out) const {
    return toolkit::build_swiglu_expert(compute_, expert, static_cast<size_t>(cfg_.hidden_size),
                                        static_cast<size_t>(cfg_.moe_intermediate_size), fp8_, "deepseek_v3", in, out);
}

Expected<void> DeepseekV3Model::dense_ffn(int layer, const Rows& in, Rows out) const {
    return toolkit::build_dense_or_shared_ffn(compute_, layer, layers_.at(static_cast<size_t>(layer)).ffn, "deepseek_v3", in, out);
}

}  // namespace stormo::deepseek_v3
