// The multi-token-prediction draft model (see stormo/toolkit/mtp.hpp).
#include "stormo/toolkit/mtp.hpp"

#include <algorithm>

#include "stormo/toolkit/dense.hpp"

namespace stormo::toolkit {
namespace {

class MtpDraftModel final : public DraftModel {
public:
    MtpDraftModel(const Compute& compute, std::unique_ptr<Model> body, const Model& main, MtpSpec spec)
        : compute_(compute), body_(std::move(body)), main_(main), spec_(std::move(spec)) {}

    Expected<void> load(LoadContext& ctx) {
        TensorLoader load(ctx, resident_, spec_.matrix_dtypes, spec_.vector_dtypes, spec_.fp8);
        const std::string& p = spec_.prefix;
        const int64_t h = spec_.hidden;
        STORMO_TRY_ASSIGN(enorm_, load.vector(p + "enorm.weight", TensorRole::draft, h));
        STORMO_TRY_ASSIGN(hnorm_, load.vector(p + "hnorm.weight", TensorRole::draft, h));
        STORMO_TRY_ASSIGN(eh_proj_, load.matrix(p + "eh_proj.weight", TensorRole::draft, h, 2 * h));
        STORMO_TRY_ASSIGN(shared_norm_, load.vector(p + "shared_head.norm.weight", TensorRole::draft, h));
        // DeepSeek-V3's files store copies of the embedding and the head under the layer; GLM-5's
        // store none, and the main model's serve. A copy present is the one the checkpoint says.
        if (ctx.has_tensor(p + "embed_tokens.weight")) {
            STORMO_TRY_ASSIGN(own_embedding_, load.matrix(p + "embed_tokens.weight", TensorRole::draft, spec_.vocab, h));
        }
        if (ctx.has_tensor(p + "shared_head.head.weight")) {
            STORMO_TRY_ASSIGN(own_head_, load.matrix(p + "shared_head.head.weight", TensorRole::draft, spec_.vocab, h));
        }
        return {};
    }

    int n_layers() const override { return body_->n_layers(); }
    size_t hidden_size() const override { return static_cast<size_t>(spec_.hidden); }
    size_t vocab_size() const override { return static_cast<size_t>(spec_.vocab); }
    const LayerPlan& layer_plan(int layer) const override { return body_->layer_plan(layer); }

    Expected<void> embed(std::span<const int32_t> tokens, Rows out) const override {
        if (own_embedding_) return embed_tokens(compute_, *own_embedding_, tokens, out, spec_.who + " MTP layer");
        return main_.embed(tokens, out);
    }
    // The decoder layer's norms are the body's; the final one is shared_head.norm.
    void norm(NormSite site, int layer, const Rows& in, Rows out) const override {
        if (site == NormSite::final) rms_norm_rows(compute_, shared_norm_, spec_.rms_norm_eps, in, out);
        else body_->norm(site, layer, in, out);
    }
    Expected<void> attention(int layer, const StepContext& ctx, const Rows& normed, BlockKv kv, Rows out) const override {
        return body_->attention(layer, ctx, normed, kv, out);
    }
    Routing route(int layer, const StepContext& ctx, const Rows& normed) const override {
        return body_->route(layer, ctx, normed);
    }
    Expected<void> expert_ffn(int layer, const ExpertView& expert, const Rows& in, Rows out) const override {
        return body_->expert_ffn(layer, expert, in, out);
    }
    Expected<void> dense_ffn(int layer, const Rows& in, Rows out) const override { return body_->dense_ffn(layer, in, out); }
    void head(const Rows& normed, Rows logits) const override {
        if (own_head_) build_head(compute_, *own_head_, normed, logits);
        else main_.head(normed, logits);
    }
    const WeightView* head_weight() const override { return own_head_ ? &*own_head_ : main_.head_weight(); }

    int draft_layer() const override { return spec_.layer; }
    bool carries_normed() const override { return spec_.carries_normed; }

    Expected<void> draft_input(std::span<const int32_t> tokens, const Rows& hidden, Rows out) const override {
        const size_t n = tokens.size(), width = hidden_size();
        if (hidden.n != n || hidden.width != width || out.n != n || out.width != width)
            return fail(ErrorKind::internal, spec_.who + " MTP layer: " + std::to_string(n) + " tokens against " +
                                                 std::to_string(hidden.n) + " hidden rows of " + std::to_string(hidden.width));
        std::vector<float> embedded(n * width), joined(n * 2 * width);
        STORMO_TRY(embed(tokens, Rows{embedded.data(), n, width}));
        // [enorm(embed(token)) ; hnorm(hidden)]: the embedding half first, as vLLM and SGLang
        // apply the published eh_proj.
        std::vector<float> normed(n * width);
        rms_norm_rows(compute_, enorm_, spec_.rms_norm_eps, Rows{embedded.data(), n, width}, Rows{normed.data(), n, width});
        for (size_t r = 0; r < n; ++r) std::copy_n(normed.data() + r * width, width, joined.data() + r * 2 * width);
        rms_norm_rows(compute_, hnorm_, spec_.rms_norm_eps, hidden, Rows{normed.data(), n, width});
        for (size_t r = 0; r < n; ++r) std::copy_n(normed.data() + r * width, width, joined.data() + r * 2 * width + width);
        matmul(compute_, eh_proj_, joined.data(), n, out.data);
        return {};
    }

private:
    Compute compute_;
    std::unique_ptr<Model> body_;
    const Model& main_;
    MtpSpec spec_;
    std::vector<Tensor> resident_;
    std::vector<float> enorm_, hnorm_, shared_norm_;
    WeightView eh_proj_;
    std::optional<WeightView> own_embedding_, own_head_;
};

}  // namespace

Expected<std::unique_ptr<DraftModel>> load_mtp_draft(LoadContext& ctx, const Compute& compute, std::unique_ptr<Model> body,
                                                     const Model& main, const MtpSpec& spec) {
    if (static_cast<size_t>(spec.hidden) != main.hidden_size() || static_cast<size_t>(spec.vocab) != main.vocab_size())
        return fail(ErrorKind::internal, spec.who + " MTP layer: its hidden size or vocabulary differs from the main model's");
    auto model = std::make_unique<MtpDraftModel>(compute, std::move(body), main, spec);
    STORMO_TRY(model->load(ctx));
    return std::unique_ptr<DraftModel>(std::move(model));
}

Expected<void> check_mtp_index(int index, int64_t mtp_layers, const std::string& who) {
    if (index < 0 || index >= mtp_layers)
        return fail(ErrorKind::invalid_argument, who + ": no multi-token-prediction layer " + std::to_string(index) +
                                                     " (num_nextn_predict_layers is " + std::to_string(mtp_layers) + ")");
    return {};
}

}  // namespace stormo::toolkit
