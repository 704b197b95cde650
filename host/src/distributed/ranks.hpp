#pragma once
// Expert parallelism across processes (docs/distributed.md): under `mpirun -np N stormo ...` rank
// 0 runs the command as it runs alone, and every rank holds a share of each MoE layer's routed
// experts (ExpertSplit) in its own expert store. This header is what the command line sees of it;
// the MPI code lives in distributed/mpi/, and a build without MPI says so when started by mpirun.
#include <memory>

#include "distributed/expert_split.hpp"
#include "distributed/wire.hpp"
#include "runtime/engine.hpp"
#include "runtime/engine_identity.hpp"
#include "runtime/remote_experts.hpp"
#include "stormo/error.hpp"

namespace stormo {

struct RankPlace {
    int rank = 0;
    int ranks = 1;
};

// Whether the launcher's environment says this process is one rank of an MPI run.
bool started_by_mpirun();

// Which threads of rank 0 call MPI during a command. Every command but serve calls it from its
// own thread (MPI_THREAD_FUNNELED); serve from one thread at a time (MPI_THREAD_SERIALIZED): the
// main thread connects the ranks while loading, the inference worker's thread runs the MoE stage's
// exchanges, and the main thread stops the ranks once the worker has been joined.
enum class MpiThreads { main_only, one_at_a_time };

// MPI for the life of a command: joined before the command runs, left after it.
class RankWorld {
public:
    // MPI_Init_thread. An error when this stormo was built without MPI, or when the MPI library
    // does not provide the thread level `threads` needs (it names both levels).
    static Expected<std::unique_ptr<RankWorld>> join(int& argc, char**& argv, MpiThreads threads);
    RankWorld(const RankWorld&) = delete;
    RankWorld& operator=(const RankWorld&) = delete;
    ~RankWorld();  // MPI_Finalize, unless abort() ended the run
    RankPlace place() const { return place_; }
    // Ends every rank of the run with `status` (MPI_Abort): what a failed rank does, so no other
    // rank waits for it in MPI_Finalize. Only main calls it.
    [[noreturn]] void abort(int status);

private:
    RankWorld() = default;
    RankPlace place_;
};

// This process's place in the MPI run it is part of (asked of MPI), or {0, 1} alone.
RankPlace current_rank_place();

// Rank 0: every other rank's engine identity is checked against `mine` (a rank started with
// another model, config, engine or kernels is refused, both identities printed), then the MoE
// stage's remote experts are connected to them. Waits for each rank's answers at most
// timeout_seconds, then fails naming the rank and its host. Destroying the result tells every
// rank to stop.
// `split` is the one every rank computed (ExpertSplit). Hints of the next layer's likely experts
// go only to owners whose stores stream (their identity says so).
Expected<std::unique_ptr<RemoteExperts>> connect_expert_owners(const Engine& engine, const EngineIdentity& mine,
                                                               const ExpertSplit& split, int timeout_seconds);

// What a rank other than 0 did for rank 0.
struct ServedExperts {
    uint64_t works = 0;           // layer steps computed
    uint64_t hints = 0;           // prefetch hints received
    uint64_t hinted_experts = 0;  // experts those hints named
};

// A rank other than 0: reports its identity to rank 0, then computes the experts it holds for
// rank 0's work, and starts reading the experts rank 0's hints name, until rank 0 says stop.
// Refused by rank 0: an error naming both identities.
// `split`: the one every rank computed; a hint naming an expert this rank does not hold is refused.
Expected<ServedExperts> serve_experts(Engine& engine, const EngineIdentity& mine, const ExpertSplit& split);

// This process's host name as MPI reports it.
std::string rank_host_name();

// Under --rank-split weighted, every rank at the same point of its load: every rank's figures, in
// rank order (one allgather). A rank that does not get there within timeout_seconds fails the run.
Expected<std::vector<wire::MeasureMessage>> exchange_measures(const wire::MeasureMessage& mine, int timeout_seconds);

// "checkpoint 3f2a1c..., config 9bc0..., stormo SDK 8.0, family plugin F 0.1.0, kernels K 0.2.0, f32 activations"
std::string describe_identity(const EngineIdentity& identity);

}  // namespace stormo
