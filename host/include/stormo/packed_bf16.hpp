#pragma once
// Packing BF16 matrices into WeightFormat::BF16_PACKED (the layout: stormo/packed_bf16_layout.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "stormo/export.hpp"
#include "stormo/kernels.hpp"
#include "stormo/packed_bf16_layout.hpp"
#include "stormo/tensor.hpp"

namespace stormo::packed_bf16 {

// A packed matrix and the buffer its view points into: the rows, then rows + 1 patch offsets,
// then the patches.
struct Packed {
    std::shared_ptr<AlignedBuffer> storage;
    WeightView view;
};

// Packs a BF16 out_in matrix, its rows split over `pool` (nullptr: the calling thread). nullopt
// when the packed bytes would exceed `max_ratio` of the BF16 bytes (a row needs many patches) or
// cols exceeds kMaxCols; the caller keeps the BF16 matrix then.
STORMO_API std::optional<Packed> pack(const WeightView& bf16, ThreadPool* pool, double max_ratio);

// What a packed matrix holds in RAM and what one pass over it reads: rows, patch offsets, patches.
STORMO_API uint64_t bytes(size_t rows, size_t cols, uint64_t n_patches);
STORMO_API uint64_t bytes(const WeightView& packed);

// The reference group decoder (DecodePackedGroupsFn): slot by slot, as the layout defines.
STORMO_API void decode_groups(const uint8_t* row, size_t groups, uint16_t* out);

}  // namespace stormo::packed_bf16
