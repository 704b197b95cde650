// Rank 0's side of expert parallelism: the identity check at start, then per MoE layer the work
// sent to each owner of the chosen experts and their outputs put back in (row, slot) order.
#include <algorithm>
#include <chrono>
#include <list>
#include <optional>

#include "distributed/expert_split.hpp"
#include "distributed/mpi/mpi_messages.hpp"
#include "distributed/ranks.hpp"

namespace stormo {
namespace {

std::string rank_on(int rank, const std::string& host) { return "rank " + std::to_string(rank) + " (" + host + ")"; }

// What a rank's identity differs from rank 0's in, as the refusal says it; empty: nothing.
std::string difference(const EngineIdentity& theirs, const EngineIdentity& mine) {
    if (theirs.model != mine.model) return "another model";
    if (theirs.config != mine.config) return "another config";
    if (theirs.engine != mine.engine) return "another engine version";
    if (theirs.kernels != mine.kernels) return "other kernels";
    return {};
}

// What rank 0 knows of another rank from its identity.
struct RankPeer {
    std::string host;
    bool streams = false;
};

class MpiRemoteExperts final : public RemoteExperts {
public:
    MpiRemoteExperts(std::vector<int> n_experts, ExpertSplit split, std::vector<RankPeer> peers, int timeout_seconds)
        : n_experts_(std::move(n_experts)), split_(std::move(split)), peers_(std::move(peers)), timeout_(timeout_seconds) {}

    // Every rank leaves its loop; a rank that is gone or hangs does not hold this up (the stop and
    // the hints are small messages, sent eagerly). After a lost rank nothing is sent: the command
    // fails and main ends every rank (MPI_Abort).
    ~MpiRemoteExperts() override {
        if (lost_) return;
        const auto deadline = mpi::Clock::now() + std::chrono::seconds(timeout_);
        for (auto& h : hint_sends_) (void)mpi::wait_sent(h, deadline);
        for (int r = 1; r < split_.ranks(); ++r) (void)mpi::send(r, wire::Tag::stop, {});
    }

    bool takes_hints() const override {
        return std::any_of(peers_.begin() + 1, peers_.end(), [](const RankPeer& p) { return p.streams; });
    }

    Expected<void> prefetch(int layer, std::span<const int32_t> experts) override {
        if (lost_) return tl::unexpected(*lost_);
        return remember_loss(send_hints(layer, experts));
    }

    bool holds(int layer, int32_t expert) const override { return owner(layer, expert) == 0; }

    // A lost rank stays lost: every later exchange fails at once with its error, so the requests
    // behind the one that saw it fail without waiting out the timeout again.
    Expected<void> send(const RemoteExpertWork& work) override {
        if (lost_) return tl::unexpected(*lost_);
        return remember_loss(send_work(work));
    }

    Expected<void> collect(const RemoteExpertWork& work, std::span<float> contributions) override {
        if (lost_) return tl::unexpected(*lost_);
        return remember_loss(collect_work(work, contributions));
    }

    RemoteExpertStats stats() const override { return stats_; }

private:
    Expected<void> remember_loss(Expected<void> done) {
        if (!done && done.error().kind == ErrorKind::peer_lost) lost_ = done.error();
        return done;
    }

    Expected<void> send_hints(int layer, std::span<const int32_t> experts) {
        // Hints already delivered give their buffers back; the ones still in flight keep theirs.
        std::erase_if(hint_sends_, [](mpi::PendingSend& h) { return mpi::sent(h); });
        std::vector<wire::PrefetchMessage> hints(static_cast<size_t>(split_.ranks()));
        for (int32_t e : experts) {
            const int r = owner(layer, e);
            if (r != 0 && peers_[static_cast<size_t>(r)].streams) hints[static_cast<size_t>(r)].experts.push_back(e);
        }
        for (int r = 1; r < split_.ranks(); ++r) {
            wire::PrefetchMessage& h = hints[static_cast<size_t>(r)];
            if (h.experts.empty()) continue;
            h.layer = layer;
            stats_.hinted_experts += h.experts.size();
            ++stats_.hints;
            STORMO_TRY(mpi::start_send(hint_sends_.emplace_back(mpi::PendingSend{wire::encode(h), r}), wire::Tag::prefetch));
        }
        return {};
    }

    Expected<void> send_work(const RemoteExpertWork& work) {
        STORMO_TRY(drain_unanswered());
        const size_t width = work.rows->width;
        std::vector<wire::WorkMessage> messages(static_cast<size_t>(split_.ranks()));
        // Per rank, where each block row went among the rows sent to it (-1: not sent yet).
        std::vector<std::vector<int64_t>> sent_as(static_cast<size_t>(split_.ranks()));
        for (int32_t e : work.experts) {
            const auto r = static_cast<size_t>(owner(work.layer, e));
            wire::WorkMessage& m = messages[r];
            if (sent_as[r].empty()) sent_as[r].assign(work.rows->n, -1);
            m.experts.push_back(e);
            auto& indices = m.rows.emplace_back();
            for (size_t u : (*work.users)[static_cast<size_t>(e)]) {
                const size_t row = u / work.top_k;
                if (sent_as[r][row] < 0) {
                    sent_as[r][row] = static_cast<int64_t>(m.hidden.size() / width);
                    m.hidden.insert(m.hidden.end(), work.rows->row(row), work.rows->row(row) + width);
                }
                indices.push_back(static_cast<uint32_t>(sent_as[r][row]));
            }
        }
        sends_.clear();
        for (int r = 1; r < split_.ranks(); ++r) {
            wire::WorkMessage& m = messages[static_cast<size_t>(r)];
            if (m.experts.empty()) continue;
            m.layer = work.layer;
            m.width = static_cast<uint32_t>(width);
            sends_.push_back(mpi::PendingSend{wire::encode(m), r});
        }
        for (auto& s : sends_) {
            STORMO_TRY(mpi::start_send(s, wire::Tag::work));
            unanswered_.push_back(s.rank);
            ++stats_.messages_sent;
            stats_.bytes_sent += s.bytes.size();
        }
        ++stats_.layers;
        return {};
    }

    Expected<void> collect_work(const RemoteExpertWork& work, std::span<float> contributions) {
        const auto started = mpi::Clock::now();
        const auto deadline = started + std::chrono::seconds(timeout_);
        std::vector<int> waiting;
        for (auto& s : sends_) {
            STORMO_TRY_ASSIGN(const bool sent, mpi::wait_sent(s, deadline));
            if (!sent) return no_answer(s.rank, work.layer);
            waiting.push_back(s.rank);
        }
        while (!waiting.empty()) {
            const std::optional<int> r = mpi::first_waiting(waiting, wire::Tag::result, deadline);
            if (!r) return no_answer(waiting.front(), work.layer);
            STORMO_TRY_ASSIGN(const auto message, mpi::receive(*r, wire::Tag::result));
            stats_.bytes_received += message.bytes.size();
            // Answered, whatever the answer says: the next layer does not wait for it again.
            waiting.erase(std::find(waiting.begin(), waiting.end(), *r));
            unanswered_.erase(std::find(unanswered_.begin(), unanswered_.end(), *r));
            STORMO_TRY(put_back(*r, work, message.bytes, contributions));
        }
        sends_.clear();
        stats_.wait_seconds += std::chrono::duration<double>(mpi::Clock::now() - started).count();
        return {};
    }

    // A stage that failed between send() and collect() (its own experts' compute failed) left
    // answers on the way: they are read and dropped, so the next layer's are its own.
    Expected<void> drain_unanswered() {
        const auto deadline = mpi::Clock::now() + std::chrono::seconds(timeout_);
        for (auto& s : sends_) {
            STORMO_TRY_ASSIGN(const bool sent, mpi::wait_sent(s, deadline));
            if (!sent) return no_answer(s.rank, -1);
        }
        sends_.clear();
        for (int r : unanswered_) {
            STORMO_TRY_ASSIGN(auto dropped, mpi::receive_by(r, wire::Tag::result, deadline));
            if (!dropped) return no_answer(r, -1);
        }
        unanswered_.clear();
        return {};
    }

    int owner(int layer, int32_t expert) const {
        return split_.owner(expert, n_experts_[static_cast<size_t>(layer)]);
    }

    tl::unexpected<Error> no_answer(int rank, int layer) const {
        const std::string what = layer >= 0 ? "the experts of layer " + std::to_string(layer) : std::string("an earlier layer's experts");
        return fail(ErrorKind::peer_lost, rank_on(rank, peers_[static_cast<size_t>(rank)].host) + " did not answer for " + what +
                                             " within " + std::to_string(timeout_) +
                                             " s (--rank-timeout): it died, hangs or ran out of memory");
    }

    // Rank r's outputs, expert by expert in the order they were sent, into their (row, slot) places.
    Expected<void> put_back(int r, const RemoteExpertWork& work, std::span<const std::byte> bytes, std::span<float> contributions) const {
        const std::string who = rank_on(r, peers_[static_cast<size_t>(r)].host);
        auto result = wire::decode_result(bytes);
        if (!result) return tl::unexpected(with_context(result.error(), who));
        if (!result->error.empty()) return fail(ErrorKind::io, who + ", experts of layer " + std::to_string(work.layer) + ": " + result->error);
        const size_t width = work.rows->width;
        size_t expected = 0;
        for (int32_t e : work.experts)
            if (owner(work.layer, e) == r) expected += (*work.users)[static_cast<size_t>(e)].size() * width;
        if (result->layer != work.layer || result->outputs.size() != expected)
            return fail(ErrorKind::internal, who + " answered layer " + std::to_string(result->layer) + " with " +
                                                 std::to_string(result->outputs.size()) + " floats; layer " +
                                                 std::to_string(work.layer) + " needs " + std::to_string(expected));
        const float* from = result->outputs.data();
        for (int32_t e : work.experts) {
            if (owner(work.layer, e) != r) continue;
            for (size_t u : (*work.users)[static_cast<size_t>(e)]) {
                std::copy_n(from, width, contributions.data() + u * width);
                from += width;
            }
        }
        return {};
    }

    std::vector<int> n_experts_;  // [layer]: routed experts (0 for a dense layer)
    ExpertSplit split_;
    std::vector<RankPeer> peers_;  // [rank]
    int timeout_;
    std::vector<mpi::PendingSend> sends_;
    std::list<mpi::PendingSend> hint_sends_;  // in flight: MPI reads their bytes until they complete
    std::vector<int> unanswered_;  // ranks whose answer to the last send() was not read yet
    RemoteExpertStats stats_;
    std::optional<Error> lost_;  // the first exchange that lost a rank
};

// Every rank's identity, read in rank order; the refusal names each rank that differs.
Expected<std::vector<RankPeer>> check_identities(const EngineIdentity& mine, int ranks, mpi::Clock::time_point deadline,
                                                 int timeout_seconds) {
    std::vector<RankPeer> peers{RankPeer{mpi::processor_name(), false}};
    std::string refusal;
    for (int r = 1; r < ranks; ++r) {
        STORMO_TRY_ASSIGN(auto message, mpi::receive_by(r, wire::Tag::identity, deadline));
        if (!message)
            return fail(ErrorKind::peer_lost, "rank " + std::to_string(r) + " did not report within " + std::to_string(timeout_seconds) +
                                                 " s of rank 0's load (--rank-timeout): it failed to start or load, or hangs");
        auto theirs = wire::decode_identity(message->bytes);
        if (!theirs) return tl::unexpected(with_context(theirs.error(), "rank " + std::to_string(r)));
        peers.push_back(RankPeer{theirs->host, theirs->streams});
        if (const std::string what = difference(theirs->identity, mine); !what.empty())
            refusal += (refusal.empty() ? "" : "; ") + rank_on(r, theirs->host) + " was started with " + what + " (" +
                       describe_identity(theirs->identity) + ") than rank 0 (" + describe_identity(mine) + ")";
    }
    const wire::VerdictMessage verdict{refusal.empty(), refusal};
    const auto bytes = wire::encode(verdict);
    for (int r = 1; r < ranks; ++r) STORMO_TRY(mpi::send(r, wire::Tag::verdict, bytes));
    if (!refusal.empty()) return fail(ErrorKind::mismatch, "refused: " + refusal);
    return peers;
}

}  // namespace

Expected<std::unique_ptr<RemoteExperts>> connect_expert_owners(const Engine& engine, const EngineIdentity& mine,
                                                               const ExpertSplit& split, int timeout_seconds) {
    const RankPlace place = current_rank_place();
    const auto deadline = mpi::Clock::now() + std::chrono::seconds(timeout_seconds);
    STORMO_TRY_ASSIGN(auto peers, check_identities(mine, place.ranks, deadline, timeout_seconds));
    std::vector<int> n_experts;
    for (int l = 0; l < engine.model().n_layers(); ++l) {
        const LayerPlan& plan = engine.model().layer_plan(l);
        n_experts.push_back(plan.ffn == FfnKind::moe ? plan.n_experts : 0);
    }
    return std::unique_ptr<RemoteExperts>(
        std::make_unique<MpiRemoteExperts>(std::move(n_experts), split, std::move(peers), timeout_seconds));
}

}  // namespace stormo
