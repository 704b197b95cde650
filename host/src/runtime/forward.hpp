#pragma once
// The common forward pass: embed -> per layer (norm, family attention, residual, norm, dense FFN
// or the host's MoE stage, residual) -> final norm -> head for the rows whose logits are needed.
// A block of positions goes through each layer together (batched prefill); decode is a block of
// one. Every row is computed by the same code in the same order either way, so batched and
// token-by-token give identical bits.
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/session.hpp"
#include "store/expert_store.hpp"
#include "stormo/family.hpp"

namespace stormo {

struct ForwardOptions {
    bool all_logits = false;                // logits for every position, else only the last
    std::vector<float>* hidden_out = nullptr;  // if set: [n_layers + 1, T, hidden], as transformers
    Tracer* tracer = nullptr;
    size_t max_block = 256;                 // positions per block (bounds activation memory)
};

struct ForwardTimes {
    double attention_seconds = 0.0;
    double moe_seconds = 0.0;
    double head_seconds = 0.0;
};

class Pipeline {
public:
    Pipeline(const Model& model, ExpertStore& store) : model_(model), store_(store) {}

    // Consumes `tokens` at the session's position. Returns logits [rows, vocab] where rows is
    // tokens.size() with all_logits, else 1. On error the session is as it was before the call.
    Expected<std::vector<float>> forward(Session& session, std::span<const int32_t> tokens,
                                         const ForwardOptions& options);

    const ForwardTimes& times() const { return times_; }
    const Model& model() const { return model_; }

private:
    Expected<void> run_block(Session& session, std::span<const int32_t> tokens, std::span<const int64_t> positions,
                             const ForwardOptions& options, std::vector<float>& x, std::vector<std::vector<float>>* hidden);
    Expected<void> moe_stage(int layer, const StepContext& ctx, const Rows& normed, Rows out);

    const Model& model_;
    ExpertStore& store_;
    ForwardTimes times_;
};

}  // namespace stormo
