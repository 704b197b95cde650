// Two kernels that serve measurements and bounds rather than the model's numbers: the bounded
// head's cheap pass over int8 rows (docs/head_bound.md) and the RAM read probe's loop
// (tools/bandwidth.hpp). Both are defined here in plain scalar code; ISA plugins replace them.
#include <cstring>

#include "reference_kernels/reference.hpp"

namespace stormo::reference {

void dot_rows_i8(const int8_t* q, size_t cols, const float* x, float* y, size_t o_begin, size_t o_end) {
    for (size_t o = o_begin; o < o_end; ++o) {
        const int8_t* row = q + o * cols;
        float acc = 0.0f;
        for (size_t i = 0; i < cols; ++i) {
            const float product = static_cast<float>(row[i]) * x[i];
            acc += product;
        }
        y[o] = acc;
    }
}

void dot_rows_q8(const int8_t* q, size_t cols, const uint8_t* u, size_t n_x, size_t u_stride, int32_t* y, size_t y_stride,
                 size_t o_begin, size_t o_end) {
    for (size_t r = 0; r < n_x; ++r)
        for (size_t o = o_begin; o < o_end; ++o) {
            const int8_t* row = q + o * cols;
            const uint8_t* ur = u + r * u_stride;
            int32_t acc = 0;  // |acc| <= cols * 127 * 128 < 2^31 for cols <= kDotRowsQ8MaxCols
            for (size_t i = 0; i < cols; ++i) acc += static_cast<int32_t>(row[i]) * (static_cast<int32_t>(ur[i]) - 128);
            y[r * y_stride + o] = acc;
        }
}

uint64_t xor_reduce(const void* p, size_t n) {
    // Eight independent accumulators: a single XOR chain would still keep up with memory, but
    // the plugins' versions use eight, and the value (an XOR) does not depend on the split.
    const auto* bytes = static_cast<const unsigned char*>(p);
    uint64_t a[8] = {};
    for (size_t i = 0; i + 64 <= n; i += 64)
        for (size_t k = 0; k < 8; ++k) {
            uint64_t w;
            std::memcpy(&w, bytes + i + 8 * k, sizeof w);
            a[k] ^= w;
        }
    return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}

}  // namespace stormo::reference
