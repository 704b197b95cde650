// MPI's life in a stormo process: one thread (the command's) calls MPI, so FUNNELED is enough;
// errors come back as codes (MPI_ERRORS_RETURN) so a failed call is a message naming its peer.
#include <mpi.h>

#include <cstdlib>

#include "distributed/ranks.hpp"

namespace stormo {

Expected<std::unique_ptr<RankWorld>> RankWorld::join(int& argc, char**& argv) {
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return fail(ErrorKind::resource, "MPI_Init_thread failed: cannot join the ranks mpirun started");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    std::unique_ptr<RankWorld> world(new RankWorld());
    world->place_ = current_rank_place();
    return world;
}

RankWorld::~RankWorld() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

void RankWorld::abort(int status) {
    MPI_Abort(MPI_COMM_WORLD, status);
    std::abort();  // MPI_Abort does not return; this only says so to the compiler
}

RankPlace current_rank_place() {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) return {};
    RankPlace place;
    MPI_Comm_rank(MPI_COMM_WORLD, &place.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &place.ranks);
    return place;
}

}  // namespace stormo
