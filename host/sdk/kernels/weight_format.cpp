// Names of the weight formats, for `stormo inspect` and error messages.
#include "stormo/kernels.hpp"

namespace stormo {

const char* weight_format_name(WeightFormat f) {
    switch (f) {
        case WeightFormat::F32: return "F32";
        case WeightFormat::BF16: return "BF16";
        case WeightFormat::F16: return "F16";
        case WeightFormat::MXFP4: return "MXFP4";
        case WeightFormat::FP8_E4M3: return "FP8_E4M3";
        case WeightFormat::count: break;
    }
    return "unknown";
}

}  // namespace stormo
