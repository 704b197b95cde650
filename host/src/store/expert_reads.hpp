#pragma once
// How one expert's parts are read into its slot: the parts sorted by file and offset, and parts
// that lie at most kCoalesceGapBytes apart in one file merged into one read range. An expert a
// container stores as one aligned range (docs/convert.md) is one read; safetensors and GGUF spread
// an expert over a range per part of it (gate, up, down, their scales and biases), two to nine.
#include <cstdint>
#include <string>
#include <vector>

#include "store/expert_store.hpp"

namespace stormo {

// Parts closer than this are read together with the bytes between them: a read costs more than
// the page of padding a container puts between two parts.
inline constexpr uint64_t kCoalesceGapBytes = 4096;

// One read: [file_begin, file_begin + span) of a file, both multiples of the alignment, into the
// slot at slot_offset; `needed` bytes of it hold data (the rest may lie past the end of the file).
struct ExpertRead {
    const std::string* file = nullptr;
    uint64_t file_begin = 0;
    uint64_t span = 0;
    uint64_t needed = 0;
    uint64_t slot_offset = 0;
};

struct ExpertReadPlan {
    std::vector<ExpertRead> reads;
    std::vector<uint64_t> part_offsets;  // where each part's data starts in the slot, in part order
    uint64_t slot_bytes = 0;
};

ExpertReadPlan plan_expert_reads(const std::vector<ExpertPartLocation>& parts, uint64_t alignment);

// The most reads any expert of these layers needs (0 without experts), with reads aligned to
// `alignment` (O_DIRECT's 4096: what `inspect` reports).
size_t reads_per_expert(const std::vector<ExpertLayerLayout>& layers, uint64_t alignment);

}  // namespace stormo
