// A build without MPI (STORMO_MPI off, or no MPI found): a single process, and a clear refusal
// when mpirun starts it.
#include <cstdlib>

#include "distributed/ranks.hpp"

namespace stormo {
namespace {

Error built_without_mpi() {
    return Error{ErrorKind::unsupported,
                 "started by mpirun, but this stormo was built without MPI (install libopenmpi-dev and "
                 "configure with -DSTORMO_MPI=ON: docs/distributed.md)"};
}

}  // namespace

Expected<std::unique_ptr<RankWorld>> RankWorld::join(int&, char**&, MpiThreads) { return tl::unexpected(built_without_mpi()); }

RankWorld::~RankWorld() = default;

// Never reached: join() refuses, so no RankWorld exists in this build.
void RankWorld::abort(int status) { std::exit(status); }

RankPlace current_rank_place() { return {}; }

Expected<std::unique_ptr<RemoteExperts>> connect_expert_owners(const Engine&, const EngineIdentity&, const ExpertSplit&, int) {
    return tl::unexpected(built_without_mpi());
}

Expected<ServedExperts> serve_experts(Engine&, const EngineIdentity&, const ExpertSplit&) { return tl::unexpected(built_without_mpi()); }

std::string rank_host_name() { return {}; }

Expected<std::vector<wire::MeasureMessage>> exchange_measures(const wire::MeasureMessage&, int) {
    return tl::unexpected(built_without_mpi());
}

}  // namespace stormo
