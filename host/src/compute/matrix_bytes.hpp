#pragma once
// Bytes of a weight matrix in its own format, for what reads it: `stormo bench-kernels` sizing its
// sets and the bounded head comparing the head with its int8 copy.
#include <cstddef>
#include <cstdint>

#include "stormo/export.hpp"
#include "stormo/kernels.hpp"

namespace stormo {

// rows x cols weights of format f: dense elements, MXFP4's nibbles and scales, GGUF's blocks.
// 0 when cols is not a whole number of the format's blocks. FP8's block scales are not counted
// (their shape is the checkpoint's, not the format's).
STORMO_API uint64_t matrix_bytes(WeightFormat f, size_t rows, size_t cols);
// A view's bytes: as above, and for BF16_PACKED with its patches counted.
STORMO_API uint64_t matrix_bytes(const WeightView& w);

}  // namespace stormo
