// Reference row decoders: row `row` of an out_in matrix widened to float, exactly (every BF16,
// F16 and scaled E2M1 value is a float). Embedding lookups and the matrix kernels both use them.
#include <array>
#include <cstring>

#include "reference_kernels/gguf_blocks.hpp"
#include "reference_kernels/mxfp4.hpp"
#include "reference_kernels/reference.hpp"
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

// FP8 E4M3 with one float scale per block (DeepSeek's, Qwen3-FP8's and GLM's weight_scale_inv):
// each value is the exact E4M3 value times its block's scale, rounded to float once.
void row_fp8_e4m3(const WeightView& w, size_t row, float* out) {
    // The 256 codes decoded once (a constant table: f8_e4m3_to_f32 is the definition).
    static const std::array<float, 256> kValues = [] {
        std::array<float, 256> t{};
        for (size_t v = 0; v < t.size(); ++v) t[v] = f8_e4m3_to_f32(static_cast<uint8_t>(v));
        return t;
    }();
    const uint8_t* values = static_cast<const uint8_t*>(w.data) + row * w.cols;
    const size_t grid_cols = (w.cols + w.block_cols - 1) / w.block_cols;
    const float* scales = w.block_scales + (row / w.block_rows) * grid_cols;
    for (size_t i = 0; i < w.cols; ++i) out[i] = kValues[values[i]] * scales[i / w.block_cols];
}

// GGUF block formats: each block decoded as dequantize_gguf decodes it (gguf_blocks.hpp), so a
// row is the bits gguf-py's dequantizer gives.
void row_gguf(const WeightView& w, size_t row, float* out) {
    const gguf::BlockFormat bf = gguf::block_format(w.format);
    const std::byte* blocks = gguf::row_blocks(w, row);
    for (size_t b = 0; b < w.cols / bf.values; ++b) bf.decode(blocks + b * bf.bytes, out + b * bf.values);
}

}  // namespace stormo::reference
