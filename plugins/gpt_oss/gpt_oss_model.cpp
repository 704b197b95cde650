// GPT-OSS loading (every resident tensor declared with its exact shape from config.json) and the
// simple per-row steps: embedding lookup, RMSNorm, the head, and the dense-FFN refusal.
#include "gpt_oss_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor_names.hpp"
#include "yarn_rope.hpp"

namespace stormo::gpt_oss {
namespace {

// Every GPT-OSS checkpoint stores its non-quantized tensors in BF16; another dtype means a
// different (or damaged) checkpoint and is refused by name. Matrices stay BF16 in RAM; small
// vectors (norms, biases, sinks) are widened to float32 at load.
const std::vector<DType> kMatrixDtypes = {DType::BF16};
const std::vector<DType> kVectorDtypes = {DType::BF16};

}  // namespace

GptOssModel::GptOssModel(GptOssConfig cfg, Compute compute) : cfg_(std::move(cfg)), compute_(compute) {
    const int dim = static_cast<int>(cfg_.head_dim);
    inv_freq_ = rope_inv_freq(cfg_.rope, dim);
    rope_scaling_ = static_cast<float>(rope_attention_factor(cfg_.rope));
    // transformers: self.head_dim ** -0.5, a Python double, rounded to float where it meets the scores.
    attention_scale_ = static_cast<float>(std::pow(static_cast<double>(cfg_.head_dim), -0.5));
}

Expected<std::unique_ptr<Model>> GptOssModel::load(LoadContext& ctx) {
    auto cfg = parse_gpt_oss_config(ctx.config());
    if (!cfg) return tl::unexpected(cfg.error());
    const Compute compute = ctx.compute();
    if (compute.table == nullptr)
        return fail(ErrorKind::internal, "gpt_oss: the host gave no kernel table to load with");
    std::unique_ptr<GptOssModel> model(new GptOssModel(std::move(*cfg), compute));
    if (auto g = model->load_globals(ctx); !g) return tl::unexpected(g.error());
    model->layers_.resize(static_cast<size_t>(model->cfg_.n_layers));
    model->plans_.resize(static_cast<size_t>(model->cfg_.n_layers));
    for (int l = 0; l < model->n_layers(); ++l)
        if (auto r = model->load_layer(ctx, l); !r) return tl::unexpected(r.error());
    return std::unique_ptr<Model>(std::move(model));
}

Expected<WeightView> GptOssModel::load_matrix(LoadContext& ctx, const std::string& name, TensorRole role,
                                              int64_t rows, int64_t cols) {
    auto t = ctx.load(TensorDecl{name, role, kMatrixDtypes, Shape{rows, cols}});
    if (!t) return tl::unexpected(t.error());
    WeightView view;
    view.format = WeightFormat::BF16;
    view.layout = Layout::out_in;
    view.data = t->bytes();
    view.rows = static_cast<size_t>(rows);
    view.cols = static_cast<size_t>(cols);
    resident_.push_back(std::move(*t));
    return view;
}

Expected<std::vector<float>> GptOssModel::load_vector(LoadContext& ctx, const std::string& name, TensorRole role,
                                                      int64_t n) {
    auto t = ctx.load(TensorDecl{name, role, kVectorDtypes, Shape{n}});
    if (!t) return tl::unexpected(t.error());
    return to_f32(*t);
}

Expected<void> GptOssModel::load_globals(LoadContext& ctx) {
    const int64_t vocab = cfg_.vocab_size, hidden = cfg_.hidden_size;
    auto embed = load_matrix(ctx, names::kEmbedding, TensorRole::embedding, vocab, hidden);
    if (!embed) return tl::unexpected(embed.error());
    embed_ = *embed;
    auto norm = load_vector(ctx, names::kFinalNorm, TensorRole::norm, hidden);
    if (!norm) return tl::unexpected(norm.error());
    final_norm_ = std::move(*norm);
    if (cfg_.tie_word_embeddings) {
        head_ = embed_;  // tie_word_embeddings: the embedding matrix is the head
        return {};
    }
    auto head = load_matrix(ctx, names::kHead, TensorRole::head, vocab, hidden);
    if (!head) return tl::unexpected(head.error());
    head_ = *head;
    return {};
}

Expected<void> GptOssModel::load_attention(LoadContext& ctx, int l, AttentionWeights& w) {
    const int64_t hidden = cfg_.hidden_size;
    const int64_t q_out = static_cast<int64_t>(cfg_.q_width()), kv_out = static_cast<int64_t>(cfg_.kv_width());
    struct Projection {
        const char* name;
        int64_t rows, cols;
        WeightView* view;
        std::vector<float>* bias;
    };
    const Projection projections[] = {{"q_proj", q_out, hidden, &w.q, &w.q_bias},
                                      {"k_proj", kv_out, hidden, &w.k, &w.k_bias},
                                      {"v_proj", kv_out, hidden, &w.v, &w.v_bias},
                                      {"o_proj", hidden, q_out, &w.o, &w.o_bias}};
    for (const Projection& p : projections) {
        const std::string base = names::attention(l, p.name);
        auto m = load_matrix(ctx, base + ".weight", TensorRole::attention, p.rows, p.cols);
        if (!m) return tl::unexpected(m.error());
        *p.view = *m;
        if (!cfg_.attention_bias) continue;
        auto b = load_vector(ctx, base + ".bias", TensorRole::attention, p.rows);
        if (!b) return tl::unexpected(b.error());
        *p.bias = std::move(*b);
    }
    auto sinks = load_vector(ctx, names::attention(l, "sinks"), TensorRole::attention, cfg_.n_heads);
    if (!sinks) return tl::unexpected(sinks.error());
    w.sinks = std::move(*sinks);
    return {};
}

Expected<void> GptOssModel::load_layer(LoadContext& ctx, int l) {
    LayerWeights& w = layers_[static_cast<size_t>(l)];
    const int64_t hidden = cfg_.hidden_size, experts = cfg_.n_experts;
    auto in_norm = load_vector(ctx, names::layer(l) + "input_layernorm.weight", TensorRole::norm, hidden);
    if (!in_norm) return tl::unexpected(in_norm.error());
    w.input_norm = std::move(*in_norm);
    auto post_norm = load_vector(ctx, names::layer(l) + "post_attention_layernorm.weight", TensorRole::norm, hidden);
    if (!post_norm) return tl::unexpected(post_norm.error());
    w.post_attention_norm = std::move(*post_norm);
    if (auto a = load_attention(ctx, l, w.attn); !a) return tl::unexpected(a.error());

    auto router = load_matrix(ctx, names::router(l, "weight"), TensorRole::router, experts, hidden);
    if (!router) return tl::unexpected(router.error());
    w.router = *router;
    auto router_bias = load_vector(ctx, names::router(l, "bias"), TensorRole::router, experts);
    if (!router_bias) return tl::unexpected(router_bias.error());
    w.router_bias = std::move(*router_bias);

    auto mxfp4 = layer_experts_mxfp4(cfg_, ctx, l);
    if (!mxfp4) return tl::unexpected(mxfp4.error());
    w.mxfp4_experts = *mxfp4;
    LayerPlan& plan = plans_[static_cast<size_t>(l)];
    const bool sliding = cfg_.layer_types[static_cast<size_t>(l)] == AttentionKind::sliding;
    const size_t window = sliding ? static_cast<size_t>(cfg_.sliding_window) : 0;
    plan.kv = {KvBufferDecl{"k", cfg_.kv_width(), window}, KvBufferDecl{"v", cfg_.kv_width(), window}};
    plan.ffn = FfnKind::moe;  // every GPT-OSS layer is MoE; dense_ffn is never planned
    plan.n_experts = static_cast<int>(cfg_.n_experts);
    plan.top_k = static_cast<int>(cfg_.top_k);
    plan.shared_experts = false;
    plan.expert_parts = expert_part_decls(cfg_, l, w.mxfp4_experts);
    return ctx.declare_experts(l, plan.expert_parts, plan.n_experts);
}

Expected<void> GptOssModel::embed(std::span<const int32_t> tokens, Rows out) const {
    for (size_t r = 0; r < tokens.size(); ++r)
        if (tokens[r] < 0 || tokens[r] >= cfg_.vocab_size)
            return fail(ErrorKind::invalid_argument, "gpt_oss: token id " + std::to_string(tokens[r]) +
                                                         " at position " + std::to_string(r) +
                                                         " is outside the vocabulary [0, " +
                                                         std::to_string(cfg_.vocab_size) + ")");
    if (out.n < tokens.size() || out.width != hidden_size())
        return fail(ErrorKind::internal, "gpt_oss: embed output rows do not match the tokens and hidden_size");
    const RowToF32Fn decode = compute_.table->row_to_f32[static_cast<size_t>(embed_.format)];
    if (decode == nullptr)
        return fail(ErrorKind::unsupported, std::string("gpt_oss: no row decoder for the embedding format ") +
                                                weight_format_name(embed_.format));
    for (size_t r = 0; r < tokens.size(); ++r) decode(embed_, static_cast<size_t>(tokens[r]), out.row(r));
    return {};
}

void GptOssModel::norm(NormSite site, int layer, const Rows& in, Rows out) const {
    const std::vector<float>* weight = &final_norm_;
    if (site != NormSite::final) {
        const LayerWeights& w = layers_.at(static_cast<size_t>(layer));
        weight = site == NormSite::attention ? &w.input_norm : &w.post_attention_norm;
    }
    const float eps = static_cast<float>(cfg_.rms_norm_eps);
    for (size_t r = 0; r < in.n; ++r) compute_.table->rmsnorm(in.row(r), weight->data(), in.width, eps, out.row(r));
}

void GptOssModel::head(const Rows& normed, Rows logits) const {
    matmul(compute_, head_, normed.data, normed.n, logits.data);
}

Expected<void> GptOssModel::dense_ffn(int layer, const Rows&, Rows) const {
    // Unreachable by plan: every layer is FfnKind::moe with no shared experts.
    return fail(ErrorKind::internal, "gpt_oss layer " + std::to_string(layer) + " has no dense FFN");
}

}  // namespace stormo::gpt_oss
