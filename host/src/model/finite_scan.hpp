#pragma once
// `stormo inspect --check`: scans a checkpoint's tensors for NaN and infinity. A poisoned weight
// otherwise shows only as a failed generation (forward.cpp names the layer); this names the tensor.
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_source.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"

namespace stormo {

struct NonFiniteTensor {
    std::string name;
    uint64_t values = 0;  // NaN or infinite elements (for scales: NaN scales)
};

struct FiniteScan {
    uint64_t tensors_scanned = 0;  // tensors of a dtype that can hold NaN or Inf
    uint64_t bytes_scanned = 0;
    std::vector<NonFiniteTensor> non_finite;  // in the source's (name) order
};

// Floats (F64, F32, F16, BF16) are checked for NaN and Inf, FP8 (E4M3, E5M2) values for their NaN
// (and E5M2's Inf) codes, and the E8M0 scales of MXFP4 (U8 tensors named "*scales") for 0xFF, their
// NaN; other integer tensors hold no such values and are skipped.
STORMO_API Expected<FiniteScan> scan_non_finite(const ModelSource& source);

}  // namespace stormo
