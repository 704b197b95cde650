#include "distributed/rank_split.hpp"

#include <algorithm>
#include <cstdio>

#include "distributed/ranks.hpp"
#include "tools/bandwidth.hpp"
#include "util/format_bytes.hpp"

namespace stormo {
namespace {

// Every expert's bytes in its file: the pieces the store would read (the probe merges neighbours).
std::vector<FileRange> expert_ranges(const std::vector<ExpertLayerLayout>& layouts) {
    std::vector<FileRange> ranges;
    for (const auto& layout : layouts)
        for (const auto& expert : layout.locations)
            for (const auto& part : expert) ranges.push_back(FileRange{part.tensor->file, part.file_begin(), part.nbytes});
    return ranges;
}

// b: one expert's bytes summed over the MoE layers.
uint64_t expert_bytes_over_layers(const std::vector<ExpertLayerLayout>& layouts) {
    uint64_t bytes = 0;
    for (const auto& layout : layouts)
        if (!layout.locations.empty()) bytes += layout.bytes_per_expert();
    return bytes;
}

std::vector<int> layer_sizes(const std::vector<ExpertLayerLayout>& layouts) {
    std::vector<int> sizes;
    for (const auto& layout : layouts)
        if (!layout.locations.empty()) sizes.push_back(static_cast<int>(layout.locations.size()));
    return sizes;
}

}  // namespace

Expected<wire::MeasureMessage> measure_rank(const ExpertShareRequest& request, std::string host, bool direct_io,
                                            size_t in_flight) {
    wire::MeasureMessage m;
    m.host = std::move(host);
    m.expert_memory = request.expert_memory;
    m.holds_all = request.expert_memory >= request.expert_bytes;
    if (m.holds_all) return m;
    const std::vector<FileRange> ranges = expert_ranges(*request.layouts);
    DiskReadOptions probe;
    probe.bytes = kSplitProbeBytes;
    probe.block = uint64_t{1} << 20;
    probe.in_flight = std::max<size_t>(1, in_flight);
    probe.direct_io = direct_io;
    probe.passes = 2;
    auto disk = measure_disk_read_bandwidth(ranges, probe);
    if (!disk) return tl::unexpected(with_context(disk.error(), "--rank-split weighted: the disk read probe"));
    m.disk_bytes_per_s = disk->bytes_per_s;
    return m;
}

ExpertSplit split_by_measures(std::span<const wire::MeasureMessage> ranks, const std::vector<ExpertLayerLayout>& layouts) {
    const double b = static_cast<double>(expert_bytes_over_layers(layouts));
    std::vector<RankCapacity> capacity;
    for (const wire::MeasureMessage& m : ranks)
        capacity.push_back(RankCapacity{b > 0.0 ? static_cast<double>(m.expert_memory) / b : 0.0, m.disk_bytes_per_s});
    return ExpertSplit::weighted(std::move(capacity), layer_sizes(layouts));
}

std::shared_ptr<const RankShares> share_experts(EngineOptions& options, int rank, int ranks, RankSplit rule) {
    auto shares = std::make_shared<RankShares>();
    shares->split = ExpertSplit::even(ranks);
    if (rule == RankSplit::even) {
        options.holds_expert = [split = shares->split, rank](int expert, int n_experts) {
            return split.owner(expert, n_experts) == rank;
        };
        return shares;
    }
    options.choose_experts = [shares, rank, direct_io = options.direct_io, in_flight = options.io_threads,
                              timeout = options.rank_timeout_seconds](
                                 const ExpertShareRequest& request) -> Expected<std::function<bool(int, int)>> {
        STORMO_TRY_ASSIGN(const wire::MeasureMessage mine, measure_rank(request, rank_host_name(), direct_io, in_flight));
        STORMO_TRY_ASSIGN(shares->measures, exchange_measures(mine, timeout));
        shares->split = split_by_measures(shares->measures, *request.layouts);
        shares->layer_sizes = layer_sizes(*request.layouts);
        return [shares, rank](int expert, int n_experts) { return shares->split.owner(expert, n_experts) == rank; };
    };
    return shares;
}

std::vector<std::string> describe_shares(const RankShares& shares) {
    std::vector<std::string> lines;
    // Each distinct layer size once: a rank's line says how many of n it holds for each.
    std::vector<int> sizes = shares.layer_sizes;
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    for (size_t r = 0; r < shares.measures.size(); ++r) {
        const wire::MeasureMessage& m = shares.measures[r];
        std::string held;
        for (int n : sizes)
            held += (held.empty() ? "" : ", ") + std::to_string(shares.split.count(static_cast<int>(r), n)) + " of " +
                    std::to_string(n);
        char rate[32];
        std::snprintf(rate, sizeof rate, "%.2f GB/s", m.disk_bytes_per_s / 1e9);
        lines.push_back("rank " + std::to_string(r) + " (" + m.host + "): " + format_bytes(m.expert_memory) +
                        " for experts, " + (m.holds_all ? std::string("in RAM") : "disk " + std::string(rate)) + ", holds " +
                        held + " experts per layer");
    }
    return lines;
}

}  // namespace stormo
