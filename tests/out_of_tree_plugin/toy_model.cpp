// The toy family's model: a dense pre-norm decoder (GQA attention with RoPE, a SwiGLU MLP per
// layer) assembled from the family toolkit, so `stormo generate` runs the toy's checkpoints.
#include <cmath>
#include <string>

#include "stormo/toolkit/attention.hpp"
#include "stormo/toolkit/config_reader.hpp"
#include "stormo/toolkit/decoder_model.hpp"
#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/loading.hpp"
#include "stormo/toolkit/rope.hpp"
#include "toy_family.hpp"

namespace toy {
namespace {

using namespace stormo;

struct ToyConfig {
    int64_t hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
    double eps = 0.0;
    toolkit::RopeParams rope;
};

std::string layer_prefix(int l) { return "model.layers." + std::to_string(l) + "."; }

class ToyModel final : public toolkit::DecoderModel {
public:
    ToyModel(const ToyConfig& c, Compute compute)
        : DecoderModel(compute, "toy", static_cast<size_t>(c.hidden), static_cast<size_t>(c.vocab),
                       static_cast<size_t>(c.layers), static_cast<float>(c.eps)),
          cfg_(c),
          rope_(c.rope, static_cast<int>(c.head_dim)) {
        options_.shape = {static_cast<size_t>(c.heads), static_cast<size_t>(c.kv_heads), static_cast<size_t>(c.head_dim)};
        options_.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
        options_.rope = &rope_;
        options_.who = "toy";
    }

    Expected<void> load_weights(LoadContext& ctx) {
        const std::vector<DType> dtypes = {DType::BF16, DType::F32};
        toolkit::TensorLoader load(ctx, resident_, dtypes, dtypes);
        STORMO_TRY(load_ends(load, "model.embed_tokens.weight", "lm_head.weight", "model.norm.weight", false));
        layers_.resize(static_cast<size_t>(cfg_.layers));
        for (int l = 0; l < n_layers(); ++l) {
            Layer& w = layers_[static_cast<size_t>(l)];
            const std::string p = layer_prefix(l);
            STORMO_TRY(toolkit::load_layer_norms(load, p, l, cfg_.hidden, norms_));
            STORMO_TRY(toolkit::load_gqa_projections(load, p + "self_attn", options_.shape, cfg_.hidden, false, w.attn));
            STORMO_TRY_ASSIGN(w.mlp.gate, load.matrix(p + "mlp.gate_proj.weight", TensorRole::dense_ffn, cfg_.intermediate, cfg_.hidden));
            STORMO_TRY_ASSIGN(w.mlp.up, load.matrix(p + "mlp.up_proj.weight", TensorRole::dense_ffn, cfg_.intermediate, cfg_.hidden));
            STORMO_TRY_ASSIGN(w.mlp.down, load.matrix(p + "mlp.down_proj.weight", TensorRole::dense_ffn, cfg_.hidden, cfg_.intermediate));
            LayerPlan& plan = plans_[static_cast<size_t>(l)];
            plan.kv = toolkit::gqa_kv_buffers(options_.shape, 0);
            plan.ffn = FfnKind::dense;
        }
        return {};
    }

    Expected<void> attention(int layer, const StepContext& ctx, const Rows& normed, KvView kv, Rows out) const override {
        return toolkit::build_gqa_attention(compute_, layer, ctx, layers_.at(static_cast<size_t>(layer)).attn, options_,
                                            normed, kv, out);
    }
    Routing route(int, const StepContext&, const Rows&) const override { return {}; }
    Expected<void> expert_ffn(int layer, const ExpertView&, const Rows&, Rows) const override {
        return fail(ErrorKind::internal, "toy layer " + std::to_string(layer) + " is dense and has no experts");
    }
    Expected<void> dense_ffn(int layer, const Rows& in, Rows out) const override {
        toolkit::build_swiglu_mlp(compute_, layers_.at(static_cast<size_t>(layer)).mlp, in, out);
        return {};
    }

private:
    struct Layer {
        toolkit::GqaWeights attn;
        toolkit::SwigluMlp mlp;
    };
    ToyConfig cfg_;
    toolkit::Rope rope_;
    toolkit::GqaOptions options_;
    std::vector<Layer> layers_;
};

Expected<ToyConfig> read_config(const ModelConfig& config) {
    toolkit::ConfigReader r(config);
    ToyConfig c;
    c.hidden = r.positive("hidden_size");
    c.intermediate = r.positive("intermediate_size");
    c.layers = r.positive("num_hidden_layers");
    c.heads = r.positive("num_attention_heads");
    c.kv_heads = r.positive("num_key_value_heads");
    c.head_dim = r.positive("head_dim");
    c.vocab = r.positive("vocab_size");
    c.eps = r.positive_number("rms_norm_eps");
    c.rope = r.rope();
    r.require(c.heads % c.kv_heads == 0, "num_attention_heads must be a multiple of num_key_value_heads");
    return r.result(std::move(c));
}

}  // namespace

Expected<std::unique_ptr<Model>> load_model(LoadContext& ctx) {
    STORMO_TRY_ASSIGN(const ToyConfig cfg, read_config(ctx.config()));
    STORMO_TRY(toolkit::require_last_layer(ctx, cfg.layers, layer_prefix(static_cast<int>(cfg.layers) - 1) + "input_layernorm.weight"));
    auto model = std::make_unique<ToyModel>(cfg, ctx.compute());
    STORMO_TRY(model->load_weights(ctx));
    return std::unique_ptr<Model>(std::move(model));
}

}  // namespace toy
