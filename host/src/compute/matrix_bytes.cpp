#include "compute/matrix_bytes.hpp"

#include "stormo/packed_bf16.hpp"

namespace stormo {

uint64_t matrix_bytes(WeightFormat f, size_t rows, size_t cols) {
    const uint64_t n = static_cast<uint64_t>(rows) * cols;
    switch (f) {
        case WeightFormat::F32: return n * 4;
        case WeightFormat::BF16:
        case WeightFormat::F16: return n * 2;
        case WeightFormat::FP8_E4M3: return n;
        // The rows and their patch offsets; the patches themselves only a view knows.
        case WeightFormat::BF16_PACKED: return packed_bf16::bytes(rows, cols, 0);
        case WeightFormat::MXFP4: return cols % 32 == 0 ? n / 2 + n / 32 : 0;
        case WeightFormat::GGUF_Q8_0:
        case WeightFormat::GGUF_Q4_0:
        case WeightFormat::GGUF_Q4_K:
        case WeightFormat::GGUF_Q5_K:
        case WeightFormat::GGUF_Q6_K:
        case WeightFormat::GGUF_MXFP4:
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
        case WeightFormat::GGUF_IQ1_M: {
            const WeightBlock b = gguf_weight_block(f);
            return cols % b.values == 0 ? rows * (cols / b.values) * b.bytes : 0;
        }
        case WeightFormat::count: break;
    }
    return 0;
}

uint64_t matrix_bytes(const WeightView& w) {
    if (w.format == WeightFormat::BF16_PACKED) return packed_bf16::bytes(w);
    return matrix_bytes(w.format, w.rows, w.cols);
}

}  // namespace stormo
