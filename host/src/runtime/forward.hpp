#pragma once
// The common forward pass: embed -> per layer (norm, family attention, residual, norm, dense FFN
// or the host's MoE stage, residual) -> final norm -> head for the rows whose logits are needed.
// A block of positions goes through each layer together (batched prefill); decode is a block of
// one. Every row is computed by the same code in the same order either way, so batched and
// token-by-token give identical bits.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "runtime/compact_head.hpp"
#include "runtime/expert_schedule.hpp"
#include "runtime/remote_experts.hpp"
#include "runtime/route_override.hpp"
#include "runtime/session.hpp"
#include "store/expert_store.hpp"
#include "store/route_trace.hpp"
#include "stormo/family.hpp"

namespace stormo {

struct MtpDraft;

struct ForwardOptions {
    bool all_logits = false;                // logits for every position, else only the last
    std::vector<float>* hidden_out = nullptr;  // if set: [n_layers + 1, T, hidden], as transformers
    Tracer* tracer = nullptr;
    size_t max_block = 256;                 // positions per block (bounds activation memory)
    // After each block: positions of this call done so far, and their total (a progress line).
    std::function<void(size_t done, size_t total)> on_block;
    // Greedy decoding: when set (all_logits false), the last row's argmax (the lowest index among
    // equals, stormo::argmax) is written here and forward returns no logits. With a bounded head
    // (Pipeline::use_bounded_head) only the rows the compact copy cannot rule out are computed
    // exactly (docs/head_bound.md); either way the token is the full head's argmax.
    int32_t* argmax_out = nullptr;
    // A verify step (speculative decoding): when set, every row's argmax (as argmax_out gives the
    // last row's) is written here, one per token of the call, and forward returns no logits.
    // One row is read by bound as argmax_out is; several take the full head's argmax from one
    // read of it, the token the bound would give.
    std::vector<int32_t>* argmax_rows_out = nullptr;
    // When set: the final-normed rows of the call, [tokens, hidden] (what a draft model that
    // reads the main model's last hidden state, an MTP head, starts from).
    std::vector<float>* final_rows_out = nullptr;
    // When set: the rows before the final norm, [tokens, hidden] (a DeepSeek-V3 MTP layer's
    // output, which its chained drafts carry).
    std::vector<float>* pre_norm_rows_out = nullptr;
    // A draft model's call (runtime/mtp_draft_source.hpp): `input_rows` [tokens, hidden] stand in
    // for the tokens' embedding, and the layers before `first_layer` are skipped (a draft model's
    // layers before its own are empty).
    std::span<const float> input_rows = {};
    int first_layer = 0;
};

struct ForwardTimes {
    double attention_seconds = 0.0;
    double moe_seconds = 0.0;
    double head_seconds = 0.0;
    uint64_t predicted_chosen = 0;  // experts a layer chose that the prediction from the layer before named
    uint64_t chosen = 0;            // experts chosen in layers that had a prediction
    uint64_t replays = 0;             // KV recomputed from position 0 after a rewind past a ring's slack
    uint64_t replayed_positions = 0;  // positions those replays recomputed
    // The head read by bound: steps that took it, and over those steps the rows whose exact
    // logit was computed (the rest were decided by the compact copy alone).
    uint64_t bounded_head_steps = 0;
    uint64_t bounded_head_exact_rows = 0;
    // Head rows computed exactly by any road: vocab per full-head row, the candidates per
    // bounded step (what the head's matrix reads count).
    uint64_t head_rows_exact = 0;
};

// One sequence's part of a batched step (Pipeline::forward_batch): its tokens, consumed at its
// session's position, and what the step gives back for it.
struct SequenceStep {
    enum class Want : uint8_t {
        nothing,      // a chunk of a prompt whose end is still to come
        last_logits,  // the logits of the last row (sampling)
        last_argmax,  // the argmax of the last row's logits (greedy), the full head's token
        all_logits,   // every row's logits (a verify step that samples, masks or reports logprobs)
        all_argmax,   // every row's argmax (a greedy verify step)
    };
    Session* session = nullptr;
    std::span<const int32_t> tokens;
    Want want = Want::last_logits;
    // Out: the last row's logits (last_logits) or every row's ([rows, vocab], all_logits); the
    // last row's argmax (last_argmax, all_argmax) and every row's (all_argmax).
    std::vector<float> logits;
    int32_t argmax = -1;
    std::vector<int32_t> argmaxes = {};
    // When set: `hidden` gets the step's final-normed rows, [rows, hidden] (the hook a draft
    // source reading the main model's last hidden state, an MTP head, plugs into).
    bool want_hidden = false;
    std::vector<float> hidden = {};
};

struct PipelineSettings {
    // Predict layer L+1's experts from the state after layer L's attention (router L+1 applied to
    // it) and start reading them while layer L computes. Only where the store streams.
    bool prefetch = true;
    // Compute each expert as soon as its bytes are there (else wait for all of a layer's first).
    bool async_compute = true;
};

class Pipeline {
public:
    Pipeline(const Model& model, ExpertStore& store, PipelineSettings settings = {})
        : model_(model), store_(store), settings_(settings) {}

    // Consumes `tokens` at the session's position. Returns logits [rows, vocab] where rows is
    // tokens.size() with all_logits, else 1. On error the session is as it was before the call.
    // If the session needs a replay (a rewind went back further than a sliding window's ring
    // keeps), its KV is first recomputed from its recorded tokens; if that fails, the session stays
    // where it was and still needs the replay.
    Expected<std::vector<float>> forward(Session& session, std::span<const int32_t> tokens,
                                         const ForwardOptions& options);

    // One step of several sequences at once: every sequence's rows go through each layer
    // together (the dense weights read once for all of them, each chosen expert once for every
    // row that chose it), each row attending only to its own session's KV. Each sequence gets the
    // bits it gets from forward() alone. Each step's tokens fit one block of its session
    // (Session::max_block()); the sessions are distinct. Sessions that owe a replay replay first.
    // On error every session is as it was before the call.
    Expected<void> forward_batch(std::span<SequenceStep> steps);

    const ForwardTimes& times() const { return times_; }
    const Model& model() const { return model_; }
    // The store the MoE stage acquires from (its counters price a step's reads).
    const ExpertStore& store() const { return store_; }
    ExpertStore& store() { return store_; }
    const PipelineSettings& settings() const { return settings_; }
    // Greedy steps (ForwardOptions::argmax_out) read the head by bound from `compact`, built from
    // model().head_weight(), computing exact rows with `compute` (the model's own). nullptr: the
    // full head. The copy must outlive the pipeline's use of it.
    void use_bounded_head(const CompactHead* compact, Compute compute) {
        compact_head_ = compact;
        head_compute_ = compute;
    }
    const CompactHead* bounded_head() const { return compact_head_; }
    // Small waves of resident experts (a decode step's top-k) run one expert per thread of `pool`,
    // each expert's matrices inline on its thread, instead of one expert at a time split over the
    // pool: one call of the pool per wave instead of two or three per expert. Each expert's
    // output is computed by the same kernels in the same order either way. nullptr: never.
    void run_experts_on(ThreadPool* pool) { expert_pool_ = pool; }
    // The engine's loaded MTP layer, which requests of the mtp and auto modes draft from
    // (runtime/mtp_draft_source.hpp); null: none.
    void draft_with(const MtpDraft* mtp) { mtp_ = mtp; }
    const MtpDraft* mtp() const { return mtp_; }
    // Records every layer's chosen experts per block (a route trace, for eviction studies).
    void record_routes(std::vector<RouteStep>* trace) { route_trace_ = trace; }
    // Replaces the router's choice of experts and the prefetcher's prediction (route_override.hpp;
    // the store's measurements only: the logits mean nothing). nullptr: the model's own routing.
    void override_routes(RouteOverride* routes) { route_override_ = routes; }
    // The experts this process's store does not hold are computed through `remote` (a distributed
    // run's rank 0: runtime/remote_experts.hpp). nullptr: the store holds every expert.
    void use_remote_experts(RemoteExperts* remote) { remote_ = remote; }
    const RemoteExperts* remote_experts() const { return remote_; }

private:
    // Whether a block counts in the route trace and the prediction statistics (a replay does not:
    // it recomputes positions those already counted).
    enum class Recording : bool { off, on };
    Expected<void> replay(Session& session, size_t block);
    // The argmax of one final-normed row's logits: by bound when a compact head is in use, else
    // from the full head; a non-finite logit fails as the full head's check does.
    Expected<int32_t> head_argmax(const float* normed, int64_t position);
    // Every row's argmax of a block's final-normed rows x (ForwardOptions::argmax_rows_out).
    Expected<std::vector<int32_t>> rows_argmax(std::vector<float>& x, std::span<const int64_t> positions);
    // Every row's argmax of the final-normed rows at `rows` (one per position) by bound, or
    // nullopt when the head cannot be read so (no compact copy, or more than
    // kBoundedHeadRowsMax rows: the full head's kernel reuses each weight it loads for every row,
    // where the cheap pass converts its int8 rows again per activation row, so past a verify block
    // of the default draft_max or a batch of a few sequences one full read is the cheaper).
    std::optional<Expected<std::vector<int32_t>>> bounded_rows_argmax(const float* rows, std::span<const int64_t> positions);
    static constexpr size_t kBoundedHeadRowsMax = 16;
    // The rows of one sequence in a block.
    struct BlockPart {
        Session* session = nullptr;
        std::span<const int32_t> tokens;
    };
    // The block's parts' rows, in order, through every layer; x ends as the final-normed rows.
    // `input`: the block's rows in place of the embedding (ForwardOptions::input_rows), or empty;
    // `pre_norm`, when set, gets the rows before the final norm.
    Expected<void> run_block(std::span<const BlockPart> parts, std::span<const int64_t> positions,
                             const ForwardOptions& options, std::vector<float>& x, std::vector<std::vector<float>>* hidden,
                             Recording recording, std::span<const float> input = {}, std::vector<float>* pre_norm = nullptr);
    // The block's rows as the route override sees them (route_rows_).
    void override_rows(std::span<const BlockPart> parts, std::span<const int64_t> positions);
    struct BlockRoutes;
    // Per layer, the experts rows [end - rows, end) of the block chose, sorted and unique
    // (Session::routed_experts).
    static std::vector<std::vector<int32_t>> experts_of_rows(const BlockRoutes& routes, size_t end, size_t rows);
    // The head of a batched step: each step's output from its row of x.
    Expected<void> batch_head(std::span<SequenceStep> steps, const std::vector<float>& x, std::span<const int64_t> positions);
    Expected<void> moe_stage(int layer, const StepContext& ctx, const Rows& normed, const Rows& residual, Rows out,
                             Recording recording);
    // The experts the next MoE layer will likely choose, from the current residual state.
    std::vector<int32_t> predict_next(int layer, const StepContext& ctx, const Rows& residual, int& next_layer) const;
    // The next MoE layer's likely experts (none: layer -1), predicted when this layer's router has
    // spoken and this layer's own reads are queued; the ones other processes hold go to them as
    // hints, the rest are for this store to read ahead.
    struct NextLayerGuess {
        int layer = -1;
        std::vector<int32_t> experts;
    };
    NextLayerGuess guess_next_layer(int layer, const StepContext& ctx, const Rows& residual);
    Expected<void> compute_experts(int layer, const StepContext& ctx, const Rows& normed, const Routing& routing,
                                   const std::vector<int32_t>& chosen, const std::vector<std::vector<size_t>>& users,
                                   const Rows& residual, std::vector<float>& contributions);
    // The order a wave of experts runs in one expert per thread, when it does (run_experts_in_parallel).
    std::optional<ExpertSchedule> expert_parallel(std::span<const int32_t> group, const std::vector<std::vector<size_t>>& users,
                                                  bool tracing) const;
    Expected<void> run_experts_in_parallel(int layer, ExpertBatch& batch, std::span<const int32_t> group,
                                           const ExpertSchedule& schedule, const std::vector<std::vector<size_t>>& users,
                                           const Rows& normed, size_t k, std::vector<float>& contributions);

    const Model& model_;
    ExpertStore& store_;
    PipelineSettings settings_;
    ForwardTimes times_;
    std::vector<RouteStep>* route_trace_ = nullptr;
    RouteOverride* route_override_ = nullptr;
    std::vector<RouteRow> route_rows_;
    // The routing of the block being run, for its sessions' routed_experts: per layer, every row's choice.
    struct BlockRoutes {
        std::vector<std::vector<int32_t>> experts;  // [layer]: rows * top_k[layer]
        std::vector<size_t> top_k;
    };
    BlockRoutes* block_routes_ = nullptr;
    std::vector<std::vector<int32_t>> predicted_;  // per layer: the last prediction made for it
    const CompactHead* compact_head_ = nullptr;
    Compute head_compute_;
    ThreadPool* expert_pool_ = nullptr;
    const MtpDraft* mtp_ = nullptr;
    RemoteExperts* remote_ = nullptr;
};

}  // namespace stormo
