// What is known of a distributed run without MPI itself: whether a launcher started this process,
// and how identities read in messages.
#include <cstdlib>

#include "distributed/ranks.hpp"

namespace stormo {

// Open MPI's mpirun, and the PMI launchers of MPICH and Slurm.
bool started_by_mpirun() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
        if (std::getenv(name) != nullptr) return true;
    return false;
}

std::string describe_identity(const EngineIdentity& identity) {
    return "checkpoint " + identity.model.substr(0, 12) + ", config " + identity.config.substr(0, 12) + ", " +
           identity.engine + ", " + identity.kernels;
}

}  // namespace stormo
