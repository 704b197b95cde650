// Matrix x rows over the pool. Output rows are cut into units of kRowUnit so every chunk starts on
// a vector-friendly boundary for in_out kernels, and into chunks big enough that the call and
// wake-up cost stays small next to the arithmetic. Each output row is still computed by one
// kernel call in one fixed order, so the result is the same for any thread count.
#include <algorithm>
#include <limits>

#include "stormo/kernels.hpp"

namespace stormo {
namespace {

constexpr size_t kRowUnit = 16;
// Multiply-adds per chunk below which splitting costs more than it saves.
constexpr size_t kMinChunkWork = size_t{1} << 16;

MatmulFn find_kernel(const Compute& c, const WeightView& w) {
    const size_t f = static_cast<size_t>(w.format);
    const size_t l = static_cast<size_t>(w.layout);
    if (f >= kWeightFormatCount || l >= kLayoutCount) return nullptr;
    if (c.table != nullptr && c.table->matmul[f][l] != nullptr) return c.table->matmul[f][l];
    return reference_kernels().matmul[f][l];
}

}  // namespace

void matmul(const Compute& c, const WeightView& w, const float* x, size_t n_x, float* y) {
    if (n_x == 0 || w.rows == 0) return;
    const MatmulFn fn = find_kernel(c, w);
    if (fn == nullptr) {
        // No kernel exists for this (format, layout) (MXFP4 in_out, which no loader builds).
        // There is no error channel here, so poison the output: NaN logits fail every check.
        std::fill(y, y + n_x * w.rows, std::numeric_limits<float>::quiet_NaN());
        return;
    }
    if (c.pool == nullptr || c.pool->size() == 1) {
        fn(w, x, n_x, w.cols, y, w.rows, 0, w.rows);
        return;
    }
    const size_t units = (w.rows + kRowUnit - 1) / kRowUnit;
    const size_t work_per_unit = std::max<size_t>(1, kRowUnit * std::max<size_t>(w.cols, 1) * n_x);
    const size_t grain = std::max<size_t>(1, kMinChunkWork / work_per_unit);
    c.pool->parallel_for(units, grain, [&](size_t begin, size_t end) {
        fn(w, x, n_x, w.cols, y, w.rows, begin * kRowUnit, std::min(end * kRowUnit, w.rows));
    });
}

}  // namespace stormo
