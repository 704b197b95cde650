// GLM-MoE-DSA loading (every resident tensor declared with its exact shape from config.json) and
// the simple steps: embedding, norms, router, experts, dense MLP and shared experts, head.
#include "glm_dsa_model.hpp"

#include <cmath>

#include "stormo/toolkit/experts.hpp"
#include "stormo/toolkit/mtp.hpp"
#include "tensor_names.hpp"

namespace stormo::glm_dsa {
namespace {

// zai-org's checkpoints are BF16 (and block-scaled F8_E4M3 for the -FP8 ones, whose scales the
// loader reads); F32 and F16 hold the same values at another width. e_score_correction_bias is
// F32 (transformers keeps it in float32).
const std::vector<DType> kMatrixDtypes = {DType::BF16, DType::F32, DType::F16};
const std::vector<DType> kVectorDtypes = {DType::BF16, DType::F32, DType::F16};

}  // namespace

std::vector<KvBufferDecl> layer_kv(const GlmDsaConfig& c, int) {
    std::vector<KvBufferDecl> kv = toolkit::mla_kv_buffers(toolkit::mla_shape(c));
    kv.push_back(KvBufferDecl{"index_key", static_cast<size_t>(c.index_head_dim), 0});
    return kv;
}

GlmDsaModel::GlmDsaModel(GlmDsaConfig cfg, Compute compute)
    : DecoderModel(compute, "glm_dsa", static_cast<size_t>(cfg.hidden_size), static_cast<size_t>(cfg.vocab_size),
                   static_cast<size_t>(cfg.n_layers), static_cast<float>(cfg.rms_norm_eps)),
      cfg_(std::move(cfg)),
      rope_(cfg_.rope, static_cast<int>(cfg_.qk_rope_head_dim)) {
    mla_options_.shape = toolkit::mla_shape(cfg_);
    mla_options_.rope = &rope_;
    mla_options_.scale = static_cast<float>(std::pow(static_cast<double>(cfg_.qk_head_dim()), -0.5));
    mla_options_.kv_buffers = kv_buffer_count;
    mla_options_.who = "glm_dsa";
    router_spec_ = toolkit::sigmoid_router_spec(cfg_);
}

Expected<std::unique_ptr<Model>> GlmDsaModel::load(LoadContext& ctx) {
    STORMO_TRY_ASSIGN(GlmDsaConfig cfg, parse_glm_dsa_config(ctx.config()));
    STORMO_TRY_ASSIGN(const toolkit::Fp8Blocks fp8, toolkit::read_fp8_quantization(ctx.config(), "glm_dsa"));
    STORMO_TRY_ASSIGN(const Compute compute, toolkit::load_compute(ctx, "glm_dsa"));
    std::unique_ptr<GlmDsaModel> model(new GlmDsaModel(std::move(cfg), compute));
    model->fp8_ = fp8;
    model->layers_.resize(static_cast<size_t>(model->cfg_.n_layers));
    toolkit::TensorLoader load(ctx, model->resident_, kMatrixDtypes, kVectorDtypes, fp8);
    STORMO_TRY(model->load_weights(load, {names::kEmbedding, names::kHead, names::kFinalNorm},
                                   model->cfg_.tie_word_embeddings, [&](int l) { return model->load_layer(ctx, l); }));
    return std::unique_ptr<Model>(std::move(model));
}

Expected<std::unique_ptr<DraftModel>> GlmDsaModel::load_draft(LoadContext& ctx, const Model& main, int index) {
    STORMO_TRY_ASSIGN(GlmDsaConfig cfg, parse_glm_dsa_config(ctx.config()));
    STORMO_TRY(toolkit::check_mtp_index(index, cfg.mtp_layers, "glm_dsa"));
    STORMO_TRY_ASSIGN(const toolkit::Fp8Blocks fp8, toolkit::read_fp8_quantization(ctx.config(), "glm_dsa"));
    STORMO_TRY_ASSIGN(const Compute compute, toolkit::load_compute(ctx, "glm_dsa"));
    const int layer = static_cast<int>(cfg.n_layers) + index;
    // The body: this model with layers [0, layer) left empty (plans without KV, never run) and
    // the MTP layer's decoder layer loaded by the main layers' own loader.
    GlmDsaConfig body_cfg = cfg;
    body_cfg.n_layers = layer + 1;
    // GLM-5's MTP layer is a sparse one: its feed-forward is routed.
    body_cfg.moe_layer.resize(static_cast<size_t>(layer) + 1, true);
    std::unique_ptr<GlmDsaModel> body(new GlmDsaModel(std::move(body_cfg), compute));
    body->fp8_ = fp8;
    body->layers_.resize(static_cast<size_t>(layer) + 1);
    STORMO_TRY(body->load_layer(ctx, layer));
    toolkit::MtpSpec spec;
    spec.prefix = names::layer(layer);
    spec.layer = layer;
    spec.hidden = cfg.hidden_size;
    spec.vocab = cfg.vocab_size;
    spec.rms_norm_eps = static_cast<float>(cfg.rms_norm_eps);
    spec.carries_normed = true;  // GLM's NextN carries shared_head.norm(g) into the next chained step (family_glm_dsa.md)
    spec.who = "glm_dsa";
    spec.matrix_dtypes = kMatrixDtypes;
    spec.vector_dtypes = kVectorDtypes;
    spec.fp8 = fp8;
    return toolkit::load_mtp_draft(ctx, compute, std::move(body), main, spec);
}

Expected<void> GlmDsaModel::load_layer(LoadContext& ctx, int l) {
    toolkit::TensorLoader load(ctx, resident_, kMatrixDtypes, kVectorDtypes, fp8_);
    LayerWeights& w = layers_[static_cast<size_t>(l)];
    const int64_t hidden = cfg_.hidden_size;
    STORMO_TRY(toolkit::load_layer_norms(load, names::layer(l), l, hidden, norms_));

    STORMO_TRY(toolkit::load_mla(load, names::attention_module(l), mla_options_.shape, hidden, *compute_.table, w.mla));

    IndexerWeights& x = w.indexer;
    const int64_t idim = cfg_.index_head_dim;
    const auto idx = [&](const char* part) { return names::indexer(l, part); };
    STORMO_TRY_ASSIGN(x.wq_b, load.matrix(idx("wq_b.weight"), TensorRole::attention, cfg_.index_n_heads * idim,
                                          cfg_.q_lora_rank));
    STORMO_TRY_ASSIGN(x.wk, load.matrix(idx("wk.weight"), TensorRole::attention, idim, hidden));
    STORMO_TRY_ASSIGN(x.k_norm_weight, load.vector(idx("k_norm.weight"), TensorRole::norm, idim));
    STORMO_TRY_ASSIGN(x.k_norm_bias, load.vector(idx("k_norm.bias"), TensorRole::norm, idim));
    STORMO_TRY_ASSIGN(x.weights_proj, load.matrix(idx("weights_proj.weight"), TensorRole::attention, cfg_.index_n_heads,
                                                  hidden));

    LayerPlan& plan = plans_[static_cast<size_t>(l)];
    plan.kv = layer_kv(cfg_, l);
    const toolkit::SigmoidMoeShape ffn{hidden, cfg_.intermediate_size, cfg_.moe_intermediate_size, cfg_.n_shared_experts,
                                      cfg_.n_experts, cfg_.top_k};
    const bool moe = cfg_.moe_layer[static_cast<size_t>(l)];
    return toolkit::load_sigmoid_moe_ffn(load, ctx, names::mlp(l, ""), l, moe, ffn, kMatrixDtypes, fp8_, w.ffn, plan);
}

// Router: sigmoid scores; the correction bias only chooses (group-limited when n_group > 1); the
// weights are the chosen sigmoids, renormalised (norm_topk_prob) and scaled (routed_scaling_factor).
Routing GlmDsaModel::route(int layer, const StepContext& ctx, const Rows& normed) const {
    return toolkit::build_router(compute_, layer, ctx, layers_.at(static_cast<size_t>(layer)).ffn.router, router_spec_,
                                 normed);
}

Expected<void> GlmDsaModel::expert_ffn(int, const ExpertView& expert, const Rows& in, Rows out) const {
    return toolkit::build_swiglu_expert(compute_, expert, static_cast<size_t>(cfg_.hidden_size),
                                        static_cast<size_t>(cfg_.moe_intermediate_size), fp8_, "glm_dsa", in, out);
}

Expected<void> GlmDsaModel::dense_ffn(int layer, const Rows& in, Rows out) const {
    return toolkit::build_dense_or_shared_ffn(compute_, layer, layers_.at(static_cast<size_t>(layer)).ffn, "glm_dsa", in, out);
}

}  // namespace stormo::glm_dsa
