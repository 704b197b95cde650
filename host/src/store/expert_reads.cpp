// plan_expert_reads: see expert_reads.hpp.
#include "store/expert_reads.hpp"

#include <algorithm>
#include <numeric>

namespace stormo {
namespace {

uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// A run of parts read together: [begin, end) of one file, unaligned.
struct Run {
    const std::string* file = nullptr;
    uint64_t begin = 0;
    uint64_t end = 0;
};

}  // namespace

ExpertReadPlan plan_expert_reads(const std::vector<ExpertPartLocation>& parts, uint64_t alignment) {
    alignment = std::max<uint64_t>(alignment, 1);
    std::vector<size_t> order(parts.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const std::string& fa = parts[a].tensor->file;
        const std::string& fb = parts[b].tensor->file;
        return fa != fb ? fa < fb : parts[a].file_begin() < parts[b].file_begin();
    });
    std::vector<Run> runs;
    std::vector<size_t> run_of(parts.size(), 0);
    for (size_t p : order) {
        const ExpertPartLocation& loc = parts[p];
        const uint64_t begin = loc.file_begin();
        const uint64_t end = begin + loc.nbytes;
        if (!runs.empty() && *runs.back().file == loc.tensor->file && begin <= runs.back().end + kCoalesceGapBytes) {
            runs.back().end = std::max(runs.back().end, end);
        } else {
            runs.push_back({&loc.tensor->file, begin, end});
        }
        run_of[p] = runs.size() - 1;
    }
    ExpertReadPlan plan;
    uint64_t at = 0;
    for (const Run& run : runs) {
        ExpertRead read;
        read.file = run.file;
        read.file_begin = align_down(run.begin, alignment);
        read.span = align_up(run.end, alignment) - read.file_begin;
        read.needed = run.end - read.file_begin;
        read.slot_offset = at;
        at += read.span;
        plan.reads.push_back(read);
    }
    plan.part_offsets.resize(parts.size());
    for (size_t p = 0; p < parts.size(); ++p) {
        const ExpertRead& read = plan.reads[run_of[p]];
        plan.part_offsets[p] = read.slot_offset + (parts[p].file_begin() - read.file_begin);
    }
    plan.slot_bytes = at;
    return plan;
}

size_t reads_per_expert(const std::vector<ExpertLayerLayout>& layers, uint64_t alignment) {
    size_t most = 0;
    for (const auto& layout : layers)
        for (const auto& expert : layout.locations) most = std::max(most, plan_expert_reads(expert, alignment).reads.size());
    return most;
}

}  // namespace stormo
