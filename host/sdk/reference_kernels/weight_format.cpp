// Names of the weight formats, for `stormo inspect` and error messages, and the activation block
// each format's integer road uses.
#include "stormo/kernels.hpp"

namespace stormo {

const char* weight_format_name(WeightFormat f) {
    switch (f) {
        case WeightFormat::F32: return "F32";
        case WeightFormat::BF16: return "BF16";
        case WeightFormat::F16: return "F16";
        case WeightFormat::MXFP4: return "MXFP4";
        case WeightFormat::FP8_E4M3: return "FP8_E4M3";
        case WeightFormat::BF16_PACKED: return "BF16_PACKED";
        case WeightFormat::GGUF_Q8_0: return "GGUF_Q8_0";
        case WeightFormat::GGUF_Q4_0: return "GGUF_Q4_0";
        case WeightFormat::GGUF_Q4_K: return "GGUF_Q4_K";
        case WeightFormat::GGUF_Q5_K: return "GGUF_Q5_K";
        case WeightFormat::GGUF_Q6_K: return "GGUF_Q6_K";
        case WeightFormat::GGUF_MXFP4: return "GGUF_MXFP4";
        case WeightFormat::GGUF_Q4_1: return "GGUF_Q4_1";
        case WeightFormat::GGUF_Q5_0: return "GGUF_Q5_0";
        case WeightFormat::GGUF_Q5_1: return "GGUF_Q5_1";
        case WeightFormat::GGUF_Q2_K: return "GGUF_Q2_K";
        case WeightFormat::GGUF_Q3_K: return "GGUF_Q3_K";
        case WeightFormat::GGUF_IQ4_NL: return "GGUF_IQ4_NL";
        case WeightFormat::GGUF_IQ4_XS: return "GGUF_IQ4_XS";
        case WeightFormat::GGUF_IQ2_XXS: return "GGUF_IQ2_XXS";
        case WeightFormat::GGUF_IQ2_XS: return "GGUF_IQ2_XS";
        case WeightFormat::GGUF_IQ2_S: return "GGUF_IQ2_S";
        case WeightFormat::GGUF_IQ3_XXS: return "GGUF_IQ3_XXS";
        case WeightFormat::GGUF_IQ3_S: return "GGUF_IQ3_S";
        case WeightFormat::GGUF_IQ1_S: return "GGUF_IQ1_S";
        case WeightFormat::GGUF_IQ1_M: return "GGUF_IQ1_M";
        case WeightFormat::count: break;
    }
    return "unknown";
}

// The K-quants' super-blocks hold 256 values with one (Q6_K: sixteen) scale per 16 or 32 of them,
// so their activations are quantized as llama.cpp's Q8_K: a block of 256 meets a super-block, and
// the per-16 sums serve the minimums (Q4_K, Q5_K) and the -32 offset (Q6_K).
size_t q8_block_values(WeightFormat f) {
    switch (f) {
        case WeightFormat::GGUF_Q4_K:
        case WeightFormat::GGUF_Q5_K:
        case WeightFormat::GGUF_Q6_K: return kQ8KBlock;
        case WeightFormat::F32:
        case WeightFormat::BF16:
        case WeightFormat::F16:
        case WeightFormat::MXFP4:
        case WeightFormat::FP8_E4M3:
        case WeightFormat::BF16_PACKED:
        case WeightFormat::GGUF_Q8_0:
        case WeightFormat::GGUF_Q4_0:
        case WeightFormat::GGUF_MXFP4:
        // No integer road (q8_rows_fit is never asked): the block any row would take.
        case WeightFormat::GGUF_Q4_1:
        case WeightFormat::GGUF_Q5_0:
        case WeightFormat::GGUF_Q5_1:
        case WeightFormat::GGUF_Q2_K:
        case WeightFormat::GGUF_Q3_K:
        case WeightFormat::GGUF_IQ4_NL:
        case WeightFormat::GGUF_IQ4_XS:
        case WeightFormat::GGUF_IQ2_XXS:
        case WeightFormat::GGUF_IQ2_XS:
        case WeightFormat::GGUF_IQ2_S:
        case WeightFormat::GGUF_IQ3_XXS:
        case WeightFormat::GGUF_IQ3_S:
        case WeightFormat::GGUF_IQ1_S:
        case WeightFormat::GGUF_IQ1_M:
        case WeightFormat::count: break;
    }
    return kQ8Block;
}

}  // namespace stormo
