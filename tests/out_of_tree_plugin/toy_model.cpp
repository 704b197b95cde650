// The toy decoder over the toolkit: every dimension from config.json, every tensor declared with
// its exact shape, the steps the toolkit's own.
#include "toy_model.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "stormo/toolkit/attention.hpp"
#include "stormo/toolkit/config_reader.hpp"
#include "stormo/toolkit/decoder_model.hpp"
#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/loading.hpp"

namespace toy {
namespace {

using namespace stormo;

struct ToyConfig {
    int64_t hidden = 0, layers = 0, vocab = 0, heads = 0, inter = 0;
    double eps = 0;
};

Expected<ToyConfig> read_config(const ModelConfig& config) {
    toolkit::ConfigReader r(config);
    ToyConfig c;
    c.hidden = r.positive("hidden_size");
    c.layers = r.positive("num_hidden_layers");
    c.vocab = r.positive("vocab_size");
    c.heads = r.positive("num_attention_heads");
    c.inter = r.positive("intermediate_size");
    c.eps = r.number("rms_norm_eps");
    r.require(c.heads > 0 && c.hidden % c.heads == 0, "hidden_size is not a multiple of num_attention_heads");
    return r.result(std::move(c));
}

std::string layer(int l) { return "model.layers." + std::to_string(l) + "."; }

const std::vector<DType> kDtypes = {DType::F32, DType::F16, DType::BF16};

class ToyModel final : public toolkit::DecoderModel {
public:
    ToyModel(const ToyConfig& c, Compute compute)
        : DecoderModel(compute, "toy", static_cast<size_t>(c.hidden), static_cast<size_t>(c.vocab),
                       static_cast<size_t>(c.layers), static_cast<float>(c.eps)),
          cfg_(c) {
        options_.shape = {static_cast<size_t>(c.heads), static_cast<size_t>(c.heads), static_cast<size_t>(c.hidden / c.heads)};
        options_.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(options_.shape.head_dim)));
        options_.who = "toy";
    }

    Expected<void> load_weights(LoadContext& ctx) {
        toolkit::TensorLoader load(ctx, resident_, kDtypes, kDtypes);
        STORMO_TRY(load_ends(load, "model.embed_tokens.weight", "lm_head.weight", "model.norm.weight", true));
        attn_.resize(static_cast<size_t>(cfg_.layers));
        mlp_.resize(static_cast<size_t>(cfg_.layers));
        for (int l = 0; l < static_cast<int>(cfg_.layers); ++l) {
            const std::string p = layer(l);
            STORMO_TRY(toolkit::load_layer_norms(load, p, l, cfg_.hidden, norms_));
            STORMO_TRY(toolkit::load_gqa_projections(load, p + "self_attn", options_.shape, cfg_.hidden, false,
                                                     attn_[static_cast<size_t>(l)]));
            toolkit::SwigluMlp& m = mlp_[static_cast<size_t>(l)];
            STORMO_TRY_ASSIGN(m.gate, load.matrix(p + "mlp.gate_proj.weight", TensorRole::dense_ffn, cfg_.inter, cfg_.hidden));
            STORMO_TRY_ASSIGN(m.up, load.matrix(p + "mlp.up_proj.weight", TensorRole::dense_ffn, cfg_.inter, cfg_.hidden));
            STORMO_TRY_ASSIGN(m.down, load.matrix(p + "mlp.down_proj.weight", TensorRole::dense_ffn, cfg_.hidden, cfg_.inter));
            LayerPlan& plan = plans_[static_cast<size_t>(l)];
            plan.kv = toolkit::gqa_kv_buffers(options_.shape, 0);
            plan.ffn = FfnKind::dense;
        }
        return {};
    }

    Expected<void> attention(int l, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const override {
        return toolkit::build_gqa_attention(compute_, l, ctx, attn_.at(static_cast<size_t>(l)), options_, normed, kv, out);
    }
    Routing route(int, const StepContext&, const Rows&) const override { return {}; }
    Expected<void> expert_ffn(int, const ExpertView&, const Rows&, Rows) const override {
        return fail(ErrorKind::internal, "toy: no layer has experts");
    }
    Expected<void> dense_ffn(int l, const Rows& in, Rows out) const override {
        toolkit::build_swiglu_mlp(compute_, mlp_.at(static_cast<size_t>(l)), in, out);
        return {};
    }

private:
    ToyConfig cfg_;
    toolkit::GqaOptions options_;
    std::vector<toolkit::GqaWeights> attn_;
    std::vector<toolkit::SwigluMlp> mlp_;
};

}  // namespace

Expected<std::unique_ptr<Model>> load_toy_model(LoadContext& ctx) {
    STORMO_TRY_ASSIGN(const ToyConfig c, read_config(ctx.config()));
    STORMO_TRY(toolkit::require_last_layer(ctx, c.layers, layer(static_cast<int>(c.layers) - 1) + "input_layernorm.weight"));
    auto model = std::make_unique<ToyModel>(c, ctx.compute());
    STORMO_TRY(model->load_weights(ctx));
    return std::unique_ptr<Model>(std::move(model));
}

}  // namespace toy
