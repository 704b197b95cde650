#pragma once
// What every pre-norm decoder family's Model shares: the embedding lookup, the norms, the head, the
// layer plans and the storage of the resident tensors. A family derives from it and writes only its
// own steps (attention, route, expert_ffn, dense_ffn) and its load.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"
#include "stormo/toolkit/dense.hpp"
#include "stormo/toolkit/loading.hpp"

namespace stormo::toolkit {

// The checkpoint names of a decoder's ends.
struct DecoderEnds {
    std::string embedding;
    std::string head;        // not read when the head is tied to the embedding
    std::string final_norm;
};

// The host's kernel table and pool a family loads with (it decodes and dequantizes weights with
// them), or an internal error naming the family when the host gave no table.
Expected<Compute> load_compute(const LoadContext& ctx, const std::string& who);

class DecoderModel : public Model {
public:
    int n_layers() const override { return static_cast<int>(plans_.size()); }
    size_t hidden_size() const override { return hidden_; }
    size_t vocab_size() const override { return vocab_; }
    const LayerPlan& layer_plan(int layer) const override { return plans_.at(static_cast<size_t>(layer)); }

    Expected<void> embed(std::span<const int32_t> tokens, Rows out) const override;
    void norm(NormSite site, int layer, const Rows& in, Rows out) const override;
    void head(const Rows& normed, Rows logits) const override;
    const WeightView* head_weight() const override { return &embedding_.head; }

protected:
    // `who` names the family in errors.
    DecoderModel(Compute compute, std::string who, size_t hidden, size_t vocab, size_t layers, float rms_norm_eps);

    // The token embedding, the head (the embedding itself when `tied`) and the final norm.
    Expected<void> load_ends(TensorLoader& load, const std::string& embedding, const std::string& head,
                             const std::string& final_norm, bool tied);
    // The body of every decoder family's load, once its model is built and its layers sized: the
    // ends through `load`, then load_layer(l) for every layer in order.
    Expected<void> load_weights(TensorLoader& load, const DecoderEnds& ends, bool tied,
                                const std::function<Expected<void>(int layer)>& load_layer);

    Compute compute_;
    std::string who_;
    std::vector<Tensor> resident_;  // owns the bytes the weight views point into
    EmbeddingAndHead embedding_;
    DecoderNorms norms_;
    std::vector<LayerPlan> plans_;  // one per layer

private:
    size_t hidden_;
    size_t vocab_;
};

}  // namespace stormo::toolkit
