// The weighted split's one exchange (distributed/rank_split.hpp): every rank's figures to every
// rank, each in a slot of wire::kMeasureBytes, by one allgather with rank 0's deadline.
#include <chrono>

#include "distributed/mpi/mpi_messages.hpp"
#include "distributed/ranks.hpp"

namespace stormo {

std::string rank_host_name() { return mpi::processor_name(); }

Expected<std::vector<wire::MeasureMessage>> exchange_measures(const wire::MeasureMessage& mine, int timeout_seconds) {
    const auto deadline = mpi::Clock::now() + std::chrono::seconds(timeout_seconds);
    STORMO_TRY_ASSIGN(const auto all, mpi::allgather_by(wire::encode(mine), deadline));
    if (!all)
        return fail(ErrorKind::resource, "--rank-split weighted: not every rank reported what it can give the experts within " +
                                             std::to_string(timeout_seconds) +
                                             " s (--rank-timeout): one failed to start or load, hangs, or was not started with "
                                             "--rank-split weighted");
    std::vector<wire::MeasureMessage> measures;
    for (size_t at = 0; at < all->size(); at += wire::kMeasureBytes) {
        auto m = wire::decode_measure(std::span(*all).subspan(at, wire::kMeasureBytes));
        if (!m) return tl::unexpected(with_context(m.error(), "rank " + std::to_string(at / wire::kMeasureBytes)));
        measures.push_back(std::move(*m));
    }
    return measures;
}

}  // namespace stormo
