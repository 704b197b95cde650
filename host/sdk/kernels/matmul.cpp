// Matrix x rows over the pool. Output rows are cut into units of kRowUnit so every chunk starts on
// a vector-friendly boundary for in_out kernels, and into chunks big enough that the call and
// wake-up cost stays small next to the arithmetic. Each output row is still computed by one
// kernel call in one fixed order, so the result is the same for any thread count.
//
// The integer road: when the host runs it (Compute::int8_activations) and has a matmul_q8 entry for the
// format, x is quantized here, once per call, in the calling thread; every chunk then reads the
// same quantized rows, so the split cannot change a bit either.
#include <algorithm>
#include <limits>
#include <vector>

#include "stormo/kernels.hpp"

namespace stormo {
namespace {

constexpr size_t kRowUnit = 16;
// Multiply-adds per chunk below which splitting costs more than it saves.
constexpr size_t kMinChunkWork = size_t{1} << 16;
// Units per out_in chunk at least: MXFP4 kernels rearrange (float road) or prepare (integer road)
// the activations once per call, which cost 15-30% of a 16-row call of the 2880-column shape
// and 5-10% of a 64-row one (measured on the kernels alone). The pool makes at most 4 chunks a
// thread, so big matrices get far longer chunks anyway; this floor acts on small ones (a router's
// 32 outputs now run in the calling thread instead of waking a worker for 16 rows).
constexpr size_t kMinOutInUnits = 4;

MatmulFn find_kernel(const Compute& c, const WeightView& w) {
    const size_t f = static_cast<size_t>(w.format);
    const size_t l = static_cast<size_t>(w.layout);
    if (f >= kWeightFormatCount || l >= kLayoutCount) return nullptr;
    if (c.table != nullptr && c.table->matmul[f][l] != nullptr) return c.table->matmul[f][l];
    return reference_kernels().matmul[f][l];
}

MatmulQ8Fn find_q8_kernel(const Compute& c, const WeightView& w) {
    const size_t f = static_cast<size_t>(w.format);
    if (c.table == nullptr || !c.int8_activations || w.layout != Layout::out_in || f >= kWeightFormatCount)
        return nullptr;
    return c.table->matmul_q8[f];
}

// Runs kernel(begin_row, end_row) over the output rows, split over the pool when worth it.
template <class Kernel>
void split_rows(const Compute& c, const WeightView& w, size_t n_x, const Kernel& kernel) {
    if (c.pool == nullptr || c.pool->size() == 1) {
        kernel(0, w.rows);
        return;
    }
    const size_t units = (w.rows + kRowUnit - 1) / kRowUnit;
    const size_t work_per_unit = std::max<size_t>(1, kRowUnit * std::max<size_t>(w.cols, 1) * n_x);
    size_t grain = std::max<size_t>(1, kMinChunkWork / work_per_unit);
    // in_out matrices are read along their rows: a chunk of outputs reads a segment of every
    // row, so one chunk per thread keeps those segments long (fewer, longer DRAM streams: 30
    // instead of 25 GB/s with 2 threads, docs/kernels.md). out_in chunks are contiguous rows
    // anyway and keep a finer split (kMinOutInUnits).
    if (w.layout == Layout::in_out) grain = std::max(grain, units / c.pool->size());
    else grain = std::max(grain, kMinOutInUnits);
    c.pool->parallel_for(units, grain, [&](size_t begin, size_t end) {
        kernel(begin * kRowUnit, std::min(end * kRowUnit, w.rows));
    });
}

// x quantized in the blocks the format asks for (q8_block_values); the per-16 sums only where
// 256-blocks meet K-quant super-blocks, whose minimums and offsets need them.
void matmul_q8(const Compute& c, MatmulQ8Fn fn, const WeightView& w, const float* x, size_t n_x, float* y) {
    const size_t block = q8_block_values(w.format);
    const size_t blocks = (w.cols + block - 1) / block;
    std::vector<int8_t> q(n_x * blocks * block);
    std::vector<float> scales(n_x * blocks);
    std::vector<int16_t> sums(block == kQ8KBlock ? n_x * blocks * block / kQ8SumValues : 0);
    quantize_q8(x, n_x, w.cols, w.cols, block, q.data(), scales.data(), sums.empty() ? nullptr : sums.data());
    const Q8Rows rows{q.data(), scales.data(), n_x, w.cols, blocks, block, sums.empty() ? nullptr : sums.data()};
    split_rows(c, w, n_x, [&](size_t o_begin, size_t o_end) { fn(w, rows, y, w.rows, o_begin, o_end); });
}

}  // namespace

void matmul(const Compute& c, const WeightView& w, const float* x, size_t n_x, float* y) {
    if (n_x == 0 || w.rows == 0) return;
    if (const MatmulQ8Fn q8 = find_q8_kernel(c, w); q8 != nullptr) {
        matmul_q8(c, q8, w, x, n_x, y);
        return;
    }
    const MatmulFn fn = find_kernel(c, w);
    if (fn == nullptr) {
        // No kernel exists for this (format, layout) (MXFP4 in_out, which no loader builds).
        // There is no error channel here, so poison the output: NaN logits fail every check.
        std::fill(y, y + n_x * w.rows, std::numeric_limits<float>::quiet_NaN());
        return;
    }
    split_rows(c, w, n_x, [&](size_t o_begin, size_t o_end) {
        fn(w, x, n_x, w.cols, y, w.rows, o_begin, o_end);
    });
}

}  // namespace stormo
