// The shared decoder model steps (see stormo/toolkit/decoder_model.hpp).
#include "stormo/toolkit/decoder_model.hpp"

namespace stormo::toolkit {

Expected<Compute> load_compute(const LoadContext& ctx, const std::string& who) {
    const Compute compute = ctx.compute();
    if (compute.table == nullptr) return fail(ErrorKind::internal, who + ": the host gave no kernel table to load with");
    return compute;
}

DecoderModel::DecoderModel(Compute compute, std::string who, size_t hidden, size_t vocab, size_t layers,
                           float rms_norm_eps)
    : compute_(compute), who_(std::move(who)), plans_(layers), hidden_(hidden), vocab_(vocab) {
    norms_.eps = rms_norm_eps;
    norms_.input.resize(layers);
    norms_.post_attention.resize(layers);
}

Expected<void> DecoderModel::load_ends(TensorLoader& load, const std::string& embedding, const std::string& head,
                                       const std::string& final_norm, bool tied) {
    const auto vocab = static_cast<int64_t>(vocab_), hidden = static_cast<int64_t>(hidden_);
    STORMO_TRY_ASSIGN(embedding_, load_embedding_and_head(load, embedding, head, vocab, hidden, tied));
    STORMO_TRY_ASSIGN(norms_.final_norm, load.vector(final_norm, TensorRole::norm, hidden));
    return {};
}

Expected<void> DecoderModel::load_weights(TensorLoader& load, const DecoderEnds& ends, bool tied,
                                          const std::function<Expected<void>(int layer)>& load_layer) {
    STORMO_TRY(load_ends(load, ends.embedding, ends.head, ends.final_norm, tied));
    for (int l = 0; l < n_layers(); ++l) STORMO_TRY(load_layer(l));
    return {};
}

Expected<void> DecoderModel::embed(std::span<const int32_t> tokens, Rows out) const {
    return embed_tokens(compute_, embedding_.embedding, tokens, out, who_);
}

void DecoderModel::norm(NormSite site, int layer, const Rows& in, Rows out) const {
    build_norm(compute_, norms_, site, layer, in, out);
}

void DecoderModel::head(const Rows& normed, Rows logits) const {
    build_head(compute_, embedding_.head, normed, logits);
}

}  // namespace stormo::toolkit
