// Reference row decoders: row `row` of an out_in matrix widened to float, exactly (every BF16,
// F16 and scaled E2M1 value is a float). Embedding lookups and the matrix kernels both use them.
#include <cstring>

#include "kernels/mxfp4.hpp"
#include "kernels/reference.hpp"
#include "stormo/dtype.hpp"

namespace stormo::reference {

void row_f32(const WeightView& w, size_t row, float* out) {
    std::memcpy(out, static_cast<const float*>(w.data) + row * w.cols, w.cols * sizeof(float));
}

void row_bf16(const WeightView& w, size_t row, float* out) {
    const uint16_t* src = static_cast<const uint16_t*>(w.data) + row * w.cols;
    for (size_t i = 0; i < w.cols; ++i) out[i] = bf16_to_f32(src[i]);
}

void row_f16(const WeightView& w, size_t row, float* out) {
    const uint16_t* src = static_cast<const uint16_t*>(w.data) + row * w.cols;
    for (size_t i = 0; i < w.cols; ++i) out[i] = f16_to_f32(src[i]);
}

// cols must be a multiple of 32 (the loader checks it when it builds the view).
void row_mxfp4(const WeightView& w, size_t row, float* out) {
    const size_t n_blocks = w.cols / mxfp4::kBlockValues;
    const uint8_t* blocks = static_cast<const uint8_t*>(w.data) + row * n_blocks * mxfp4::kBlockBytes;
    const uint8_t* scales = w.scales + row * n_blocks;
    for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t* block = blocks + b * mxfp4::kBlockBytes;
        const float scale = mxfp4::e8m0_scale(scales[b]);
        float* dst = out + b * mxfp4::kBlockValues;
        for (size_t k = 0; k < mxfp4::kBlockValues; ++k)
            dst[k] = mxfp4::e2m1_value(mxfp4::nibble(block, k)) * scale;
    }
}

}  // namespace stormo::reference
