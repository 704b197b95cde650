// MPI's life in a stormo process: the thread level the command needs (MpiThreads), refused when
// the library gives less; errors come back as codes (MPI_ERRORS_RETURN) so a failed call is a
// message naming its peer.
#include <mpi.h>

#include <cstdlib>

#include "distributed/ranks.hpp"

namespace stormo {
namespace {

const char* level_name(int level) {
    switch (level) {
        case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
        case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
        case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
        case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    }
    return "an unknown thread level";
}

}  // namespace

Expected<std::unique_ptr<RankWorld>> RankWorld::join(int& argc, char**& argv, MpiThreads threads) {
    const int needed = threads == MpiThreads::one_at_a_time ? MPI_THREAD_SERIALIZED : MPI_THREAD_FUNNELED;
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, needed, &provided) != MPI_SUCCESS)
        return fail(ErrorKind::resource, "MPI_Init_thread failed: cannot join the ranks mpirun started");
    if (provided < needed) {
        MPI_Finalize();
        return fail(ErrorKind::unsupported, std::string("the MPI library provides ") + level_name(provided) + "; this command needs " +
                                                level_name(needed) +
                                                (threads == MpiThreads::one_at_a_time
                                                     ? " (its MoE stage runs on the server's worker thread, not the main one)"
                                                     : ""));
    }
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
