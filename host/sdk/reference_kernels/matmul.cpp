// Matrix x rows over the pool. Output rows are cut into units of kRowUnit so every chunk starts on
// a vector-friendly boundary for in_out kernels, and into chunks big enough that the call and
// wake-up cost stays small next to the arithmetic. Each output row is still computed by one
// kernel call in one fixed order, so the result is the same for any thread count.
//
// The integer road: when the host runs it (Compute::int8_activations) and has a matmul_q8 entry for the
// format, x is quantized here, once per call, in the calling thread; every chunk then reads the
// same quantized rows, so the split cannot change a bit either.
#include <algorithm>
#include <deque>
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
    // The integer road's BF16 activations, where a plugin has them (the reference's entry is
    // only the definition: run as a kernel it would be far slower than the float road).
    if (c.table != nullptr && c.int8_activations && w.layout == Layout::out_in) {
        const MatmulFn pairs = c.table->matmul_bf16a[f];
        if (pairs != nullptr && pairs != reference_kernels().matmul_bf16a[f]) return pairs;
    }
    if (c.table != nullptr && c.table->matmul[f][l] != nullptr) return c.table->matmul[f][l];
    return reference_kernels().matmul[f][l];
}

MatmulQ8Fn find_q8_kernel(const Compute& c, const WeightView& w) {
    const size_t f = static_cast<size_t>(w.format);
    if (c.table == nullptr || !c.int8_activations || w.layout != Layout::out_in || f >= kWeightFormatCount)
        return nullptr;
    return c.table->matmul_q8[f];
}

// The table's quantizer (an ISA version gives the reference's bits), else the reference.
QuantizeQ8Fn find_quantizer(const Compute& c) {
    return c.table != nullptr && c.table->quantize_q8 != nullptr ? c.table->quantize_q8 : quantize_q8;
}

// The smallest chunk, in units, worth a thread for rows of `cols` inputs times n_x activation rows.
size_t min_chunk_units(size_t cols, size_t n_x) {
    const size_t work_per_unit = std::max<size_t>(1, kRowUnit * std::max<size_t>(cols, 1) * n_x);
    return std::max<size_t>(1, kMinChunkWork / work_per_unit);
}

// Runs kernel(begin_row, end_row) over the output rows, split over the pool when worth it.
template <class Kernel>
void split_rows(const Compute& c, const WeightView& w, size_t n_x, const Kernel& kernel) {
    if (c.pool == nullptr || c.pool->size() == 1) {
        kernel(0, w.rows);
        return;
    }
    const size_t units = (w.rows + kRowUnit - 1) / kRowUnit;
    size_t grain = min_chunk_units(w.cols, n_x);
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

// x quantized in `block`-value blocks (q8_block_values of the format); the per-16 sums only where
// 256-blocks meet K-quant super-blocks, whose minimums and offsets need them.
class QuantizedRows {
public:
    QuantizedRows(QuantizeQ8Fn quantize, const float* x, size_t n_x, size_t cols, size_t block)
        : blocks_((cols + block - 1) / block),
          q_(n_x * blocks_ * block),
          scales_(n_x * blocks_),
          sums_(block == kQ8KBlock ? n_x * blocks_ * block / kQ8SumValues : 0),
          rows_{q_.data(), scales_.data(), n_x, cols, blocks_, block, sums_.empty() ? nullptr : sums_.data()} {
        quantize(x, n_x, cols, cols, block, q_.data(), scales_.data(), sums_.empty() ? nullptr : sums_.data());
    }
    QuantizedRows(const QuantizedRows&) = delete;  // rows_ points into the members
    QuantizedRows& operator=(const QuantizedRows&) = delete;
    const Q8Rows& rows() const { return rows_; }

private:
    size_t blocks_;
    std::vector<int8_t> q_;
    std::vector<float> scales_;
    std::vector<int16_t> sums_;
    Q8Rows rows_;
};

void matmul_q8(const Compute& c, MatmulQ8Fn fn, const WeightView& w, const float* x, size_t n_x, float* y) {
    const QuantizedRows q(find_quantizer(c), x, n_x, w.cols, q8_block_values(w.format));
    split_rows(c, w, n_x, [&](size_t o_begin, size_t o_end) { fn(w, q.rows(), y, w.rows, o_begin, o_end); });
}

void poison(const WeightView& w, size_t n_x, float* y) {
    // No kernel exists for this (format, layout) (MXFP4 in_out, which no loader builds). There is
    // no error channel here, so poison the output: NaN logits fail every check.
    std::fill(y, y + n_x * w.rows, std::numeric_limits<float>::quiet_NaN());
}

// One matrix of matmul_many: its kernel, and its first unit in the call's unit range.
struct ManyPart {
    const MatmulOut* out = nullptr;
    MatmulFn fn = nullptr;
    MatmulQ8Fn q8 = nullptr;
    const Q8Rows* q = nullptr;
    size_t first_unit = 0;
};

}  // namespace

void matmul_many(const Compute& c, std::span<const MatmulOut> outs, const float* x, size_t n_x) {
    bool one_by_one = outs.size() < 2 || c.pool == nullptr || c.pool->size() == 1 || n_x == 0;
    for (const MatmulOut& o : outs) one_by_one = one_by_one || o.w.layout != Layout::out_in || o.w.cols != outs[0].w.cols;
    if (one_by_one) {
        for (const MatmulOut& o : outs) matmul(c, o.w, x, n_x, o.y);
        return;
    }
    std::deque<QuantizedRows> quantized;  // one per activation block size; parts point into it
    std::vector<ManyPart> parts;
    size_t units = 0;
    for (const MatmulOut& o : outs) {
        ManyPart p{&o, nullptr, find_q8_kernel(c, o.w), nullptr, units};
        if (p.q8 != nullptr) {
            const size_t block = q8_block_values(o.w.format);
            auto it = std::find_if(quantized.begin(), quantized.end(), [&](const QuantizedRows& q) { return q.rows().block == block; });
            p.q = it != quantized.end() ? &it->rows() : &quantized.emplace_back(find_quantizer(c), x, n_x, o.w.cols, block).rows();
        } else {
            p.fn = find_kernel(c, o.w);
            if (p.fn == nullptr) {
                poison(o.w, n_x, o.y);
                continue;
            }
        }
        parts.push_back(p);
        units += (o.w.rows + kRowUnit - 1) / kRowUnit;
    }
    const size_t grain = std::max(min_chunk_units(outs[0].w.cols, n_x), kMinOutInUnits);
    c.pool->parallel_for(units, grain, [&](size_t begin, size_t end) {
        for (size_t i = 0; i < parts.size(); ++i) {
            const ManyPart& p = parts[i];
            const size_t part_end = i + 1 < parts.size() ? parts[i + 1].first_unit : units;
            if (end <= p.first_unit || begin >= part_end) continue;
            const WeightView& w = p.out->w;
            const size_t o_begin = (std::max(begin, p.first_unit) - p.first_unit) * kRowUnit;
            const size_t o_end = std::min((std::min(end, part_end) - p.first_unit) * kRowUnit, w.rows);
            if (p.q8 != nullptr) p.q8(w, *p.q, p.out->y, w.rows, o_begin, o_end);
            else p.fn(w, x, n_x, w.cols, p.out->y, w.rows, o_begin, o_end);
        }
    });
}

void matmul(const Compute& c, const WeightView& w, const float* x, size_t n_x, float* y) {
    if (n_x == 0 || w.rows == 0) return;
    if (const MatmulQ8Fn q8 = find_q8_kernel(c, w); q8 != nullptr) {
        matmul_q8(c, q8, w, x, n_x, y);
        return;
    }
    const MatmulFn fn = find_kernel(c, w);
    if (fn == nullptr) {
        poison(w, n_x, y);
        return;
    }
    split_rows(c, w, n_x, [&](size_t o_begin, size_t o_end) {
        fn(w, x, n_x, w.cols, y, w.rows, o_begin, o_end);
    });
}

}  // namespace stormo
