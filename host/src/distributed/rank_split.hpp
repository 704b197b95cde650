#pragma once
// The weighted split at start (--rank-split weighted, docs/distributed.md "The split"): each rank
// measures what it can give the routed experts once its dense part is in (its memory for experts
// and, when that memory does not hold them all, its disk's read bandwidth on the model's expert
// files), the ranks exchange the figures in one allgather, and every rank computes the same
// shares from them (weighted_shares).
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "distributed/expert_split.hpp"
#include "distributed/wire.hpp"
#include "runtime/engine.hpp"

namespace stormo {

// The most the disk probe reads: a short, bounded look at the disk, not a benchmark.
inline constexpr uint64_t kSplitProbeBytes = uint64_t{64} << 20;

// This rank's figures: its memory for experts from `request`; its disk's read bandwidth over the
// expert tensors' files unless that memory holds every expert (then "in RAM", not measured).
Expected<wire::MeasureMessage> measure_rank(const ExpertShareRequest& request, std::string host, bool direct_io,
                                            size_t in_flight);

// The split every rank computes from every rank's figures, in rank order. c_r = memory over the
// bytes of one expert summed over the MoE layers.
ExpertSplit split_by_measures(std::span<const wire::MeasureMessage> ranks, const std::vector<ExpertLayerLayout>& layouts);

// How the experts were split: even, or weighted from the figures that made the split.
struct RankShares {
    ExpertSplit split;
    std::vector<wire::MeasureMessage> measures;  // empty under the even split
    std::vector<int> layer_sizes;                // the MoE layers' expert counts, as measured
};

// Under several ranks: sets `options` up so the engine keeps this rank's share of the experts,
// even, or weighted (measured and exchanged during the load, once the dense part is in). The
// shares are known in the result once Engine::open returned.
std::shared_ptr<const RankShares> share_experts(EngineOptions& options, int rank, int ranks, RankSplit rule);

// One line per rank for rank 0's stderr: "rank 1 (hostB): 6.00 GiB for experts, disk 1.20 GB/s, 12 of 32 experts per layer".
std::vector<std::string> describe_shares(const RankShares& shares);

}  // namespace stormo
