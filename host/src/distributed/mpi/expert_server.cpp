// A rank other than 0: after the identity check, a loop that computes the experts it holds over
// the rows rank 0 sends, with the family's expert_ffn and this rank's own store, until stop.
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

}  // namespace

Expected<void> serve_experts(Engine& engine, const EngineIdentity& mine) {
    STORMO_TRY(mpi::send(0, wire::Tag::identity, wire::encode(wire::IdentityMessage{mpi::processor_name(), mine})));
    STORMO_TRY_ASSIGN(const auto answer, mpi::receive(0, wire::Tag::verdict));
    STORMO_TRY_ASSIGN(const auto verdict, wire::decode_verdict(answer.bytes));
    // Rank 0 prints the reason with both identities; every rank printing it would only interleave.
    if (!verdict.accepted) return fail(ErrorKind::mismatch, "refused by rank 0 (its message says why)");
    for (;;) {
        STORMO_TRY_ASSIGN(const auto message, mpi::receive(0, std::nullopt));
        if (message.tag == wire::Tag::stop) return {};
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
    }
}

}  // namespace stormo
