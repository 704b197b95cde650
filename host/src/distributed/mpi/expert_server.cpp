// A rank other than 0: after the identity check, a loop that computes the experts it holds over
// the rows rank 0 sends, with the family's expert_ffn and this rank's own store, and starts the
// reads rank 0's prefetch hints ask for, until stop.
#include <algorithm>

#include "distributed/mpi/mpi_messages.hpp"
#include "distributed/ranks.hpp"

namespace stormo {
namespace {

// Each expert of the work over its rows, outputs in the work's order; an expert the store cannot
// give or the family cannot compute is the answer's error.
Expected<std::vector<float>> compute_work(Engine& engine, const wire::WorkMessage& work) {
    const size_t width = work.width;
    std::vector<size_t> first(work.experts.size() + 1, 0);  // each expert's first output row
    for (size_t i = 0; i < work.experts.size(); ++i) first[i + 1] = first[i] + work.rows[i].size();
    std::vector<float> outputs(first.back() * width);
    std::vector<float> in;
    const size_t wave = std::max<size_t>(1, engine.store().max_batch());
    for (size_t begin = 0; begin < work.experts.size(); begin += wave) {
        const size_t count = std::min(wave, work.experts.size() - begin);
        STORMO_TRY_ASSIGN(auto batch, engine.store().acquire(work.layer, std::span(work.experts).subspan(begin, count)));
        for (size_t done = 0; done < count; ++done) {
            STORMO_TRY_ASSIGN(const size_t ready, batch->next());
            const size_t i = begin + ready;
            const auto& rows = work.rows[i];
            in.resize(rows.size() * width);
            for (size_t r = 0; r < rows.size(); ++r) std::copy_n(work.hidden.data() + rows[r] * width, width, in.data() + r * width);
            STORMO_TRY(engine.model().expert_ffn(work.layer, batch->view(ready), Rows{in.data(), rows.size(), width},
                                                 Rows{outputs.data() + first[i] * width, rows.size(), width}));
        }
    }
    return outputs;
}

// Starts reading a hint's experts into this rank's store (every slot is free between two works).
// A hint for an expert this rank does not hold is rank 0's mistake, and named as one.
Expected<void> read_ahead(Engine& engine, const ExpertSplit& split, const wire::PrefetchMessage& hint) {
    const Model& model = engine.model();
    const bool moe = hint.layer >= 0 && hint.layer < model.n_layers() && model.layer_plan(hint.layer).ffn == FfnKind::moe;
    const int n = moe ? model.layer_plan(hint.layer).n_experts : 0;
    const int rank = current_rank_place().rank;
    for (int32_t e : hint.experts)
        if (e >= n || split.owner(e, n) != rank)
            return fail(ErrorKind::internal, "rank 0 hinted expert " + std::to_string(e) + " of layer " + std::to_string(hint.layer) +
                                                 ", which rank " + std::to_string(rank) + " does not hold");
    engine.store().prefetch(hint.layer, hint.experts, engine.store().max_batch());
    return {};
}

}  // namespace

Expected<ServedExperts> serve_experts(Engine& engine, const EngineIdentity& mine, const ExpertSplit& split) {
    const wire::IdentityMessage identity{mpi::processor_name(), mine, engine.store().streams()};
    STORMO_TRY(mpi::send(0, wire::Tag::identity, wire::encode(identity)));
    STORMO_TRY_ASSIGN(const auto answer, mpi::receive(0, wire::Tag::verdict));
    STORMO_TRY_ASSIGN(const auto verdict, wire::decode_verdict(answer.bytes));
    // Rank 0 prints the reason with both identities; every rank printing it would only interleave.
    if (!verdict.accepted) return fail(ErrorKind::mismatch, "refused by rank 0 (its message says why)");
    ServedExperts served;
    for (;;) {
        STORMO_TRY_ASSIGN(const auto message, mpi::receive(0, std::nullopt));
        if (message.tag == wire::Tag::stop) return served;
        if (message.tag == wire::Tag::prefetch) {
            STORMO_TRY_ASSIGN(const auto hint, wire::decode_prefetch(message.bytes));
            STORMO_TRY(read_ahead(engine, split, hint));
            ++served.hints;
            served.hinted_experts += hint.experts.size();
            continue;
        }
        if (message.tag != wire::Tag::work)
            return fail(ErrorKind::internal, "rank 0 sent a message of kind " + std::to_string(static_cast<int>(message.tag)) +
                                                 " while this rank waited for work");
        wire::ResultMessage result;
        auto work = wire::decode_work(message.bytes);
        if (work) {
            result.layer = work->layer;
            auto outputs = compute_work(engine, *work);
            if (outputs) result.outputs = std::move(*outputs);
            else result.error = outputs.error().message;
        } else {
            result.error = work.error().message;
        }
        STORMO_TRY(mpi::send(0, wire::Tag::result, wire::encode(result)));
        ++served.works;
    }
}

}  // namespace stormo
