// The proof that the chosen token is the full head's (docs/head_bound.md has it at length).
//
// Notation: row o of the head decodes to floats w (the values every kernel multiplies), the
// compact copy holds q (int8) and s (float) with e = w - s q, and x is the activation row. The
// full head's logit is L = fl(sum_i w_i x_i), a float sum in the kernel's own order. The cheap
// pass gives y = fl(sum_i q_i x_i) in any order, and approx = s * y is exact in double (two
// floats' product needs 48 significant bits). Then
//   |L - approx| <= |L - w.x| + |w.x - s q.x| + s |q.x - y|
// and each part is bounded by a quantity we have:
//  1. exact rounding: any evaluation of a dot product of n terms (any summation tree, products
//     rounded or fused, zero-padded vector lanes) passes each term through at most k = 2n + 64
//     roundings of relative size <= u = 2^-24, so |L - w.x| <= gamma_k sum |w_i x_i| with
//     gamma_k = k u / (1 - k u) (Higham, Accuracy and Stability, 3.1 and 3.5), plus an absolute
//     2^-150 per operation that lands among the subnormals (at most 3n operations, counted as
//     3n * 2^-149). sum |w_i x_i| <= ||w||_2 ||x||_2 <= (s ||q||_2 + ||e||_2) ||x||_2.
//  2. quantization: |e.x| <= min(max|e_i| ||x||_1, ||e||_2 ||x||_2) (Hoelder, Cauchy-Schwarz).
//  3. cheap rounding: as in 1, s |q.x - y| <= s (gamma_k ||q||_2 ||x||_2 + 3n 2^-149).
// No overflow can occur in the exact evaluation when (1 + gamma_k) ||w||_2 ||x||_2 < 2^128; the
// bound is declared infinite (the row is always computed) from 2^100 on, so every skipped row
// has a finite exact logit, as the full head's finite check requires.
// The bound is evaluated in double: each operation rounds by at most 2^-53 of a value no larger
// than |approx| + bound, and adding 2^-45 (|approx| + bound) covers the few of them.
// The integer pass (where the kernel table has dot_rows_q8): x = step p + d with p_i =
// round(x_i / step) in [-127, 127], and the pass gives Y = q.p exactly (int32), approx = s * step
// * Y in double (two roundings of 2^-53, covered by the 2^-45 term). Then
//   |L - approx| <= |L - w.x| + |w.x - s q.x| + s |q.d|,   s |q.d| <= s ||q||_2 ||d||_2
// (Cauchy-Schwarz), with ||d||_2 bounded from above as quantize_for_head computes it; parts 1 and
// 2 are as above, and part 3's float term is kept though Y is exact (the bound only grows).
// Selection: with lo_o = approx_o - B_o and hi_o = approx_o + B_o, let best = max lo_o. The
// full head's argmax t (lowest index among the largest) has L_t >= L_best >= best, and
// hi_t >= L_t, so t is among the rows with hi_o >= best; every other row has L_o <= hi_o < best
// <= L_t, so it can neither beat t nor tie with it. The exact logits of the candidates, scanned
// in ascending index with the strict > of stormo::argmax, therefore give t.
#include "runtime/bounded_argmax.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

namespace stormo {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double gamma_k(size_t cols) {
    const double ku = static_cast<double>(2 * cols + 64) * 0x1p-24;
    return ku / (1.0 - ku) * (1.0 + 0x1p-40);
}

// Upper bounds of ||x||_1 and ||x||_2, summed in double: |x_i| and x_i^2 are exact in double, and
// n additions round by at most n 2^-53 relative, covered by the (1 + (n + 4) 2^-50) factor.
void norms(const float* x, size_t n, double& l1, double& l2) {
    double a = 0.0, b = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double v = x[i];
        a += std::fabs(v);
        b += v * v;
    }
    const double inflate = 1.0 + static_cast<double>(n + 4) * 0x1p-50;
    l1 = a * inflate;
    l2 = std::sqrt(b) * inflate;
}

MatmulFn exact_kernel(const Compute& c, const WeightView& w) {
    // The choice stormo::matmul makes on the float road (unsupported() excluded the other road).
    const size_t f = static_cast<size_t>(w.format), l = static_cast<size_t>(w.layout);
    if (c.table != nullptr && c.table->matmul[f][l] != nullptr) return c.table->matmul[f][l];
    return reference_kernels().matmul[f][l];
}

constexpr size_t kRowUnit = 64;  // cheap-pass rows per unit of pool work

}  // namespace

namespace {

// row_error_bound with gamma_k(cols) computed once per step rather than once per row.
inline double bound_of(const CompactRowBound& b, double approx, double x_l1, double x_l2, double gamma, double tiny,
                       double d_l2) {
    if (!std::isfinite(approx)) return kInf;
    const double s = b.scale;
    const double w_l2 = s * b.q_l2 + b.err_l2;  // >= ||w||_2
    if (!(w_l2 * x_l2 < 0x1p100)) return kInf;   // non-finite weights, or an overflow is possible
    const double quantization = std::min(b.err_max * x_l1, b.err_l2 * x_l2);
    const double rounding = gamma * (s * b.q_l2 + w_l2) * x_l2 + (1.0 + s) * tiny;
    const double activations = s * b.q_l2 * d_l2;  // the integer pass's |s q.d| (0 for the float pass)
    const double bound = quantization + rounding + activations;
    return bound + 0x1p-45 * (std::fabs(approx) + bound);
}

// The subnormal operations' share: at most 3n operations of 2^-150 each, counted as 3n 2^-149.
double subnormal_term(size_t cols) { return 3.0 * static_cast<double>(cols) * 0x1p-149; }

}  // namespace

double row_error_bound(const CompactRowBound& b, double approx, double x_l1, double x_l2, size_t cols, double d_l2) {
    return bound_of(b, approx, x_l1, x_l2, gamma_k(cols), subnormal_term(cols), d_l2);
}

QuantizedActivations quantize_for_head(const float* x, size_t n, size_t cols) {
    QuantizedActivations out;
    out.u.assign(n * cols, 128);
    out.step.assign(n, 0.0);
    out.d_l2.assign(n, 0.0);
    for (size_t j = 0; j < n; ++j) {
        const float* xj = x + j * cols;
        double peak = 0.0;
        bool finite = true;
        for (size_t i = 0; i < cols; ++i) {
            finite = finite && std::isfinite(xj[i]);
            peak = std::max(peak, std::fabs(static_cast<double>(xj[i])));
        }
        // A row that is not finite has an infinite bound whatever the pass gives; a zero row is
        // p = 0 exactly. Both keep u = 128 and d = x.
        if (!finite || peak == 0.0) {
            double l1 = 0.0;
            norms(xj, cols, l1, out.d_l2[j]);
            continue;
        }
        const double step = peak / 127.0;
        uint8_t* u = out.u.data() + j * cols;
        double d2 = 0.0;
        for (size_t i = 0; i < cols; ++i) {
            const double p = std::clamp(std::nearbyint(static_cast<double>(xj[i]) / step), -127.0, 127.0);
            u[i] = static_cast<uint8_t>(static_cast<int>(p) + 128);
            const double d = static_cast<double>(xj[i]) - step * p;
            d2 += d * d;
        }
        out.step[j] = step;
        // Each d_i above is within 2^-52 (|x_i| + |step p_i|) <= 2^-50 peak of the real x_i - step p_i;
        // sqrt(cols) of those, plus the sum's own rounding as in norms().
        out.d_l2[j] = std::sqrt(d2) * (1.0 + static_cast<double>(cols + 4) * 0x1p-50) +
                      std::sqrt(static_cast<double>(cols)) * peak * 0x1p-49;
    }
    return out;
}

Expected<std::vector<BoundedArgmax>> bounded_argmax_rows(const CompactHead& compact, const WeightView& head,
                                                       const Compute& compute, const float* x, size_t n) {
    const size_t rows = compact.rows(), cols = compact.cols();
    if (head.rows != rows || head.cols != cols)
        return fail(ErrorKind::internal, "bounded head: the compact copy's shape differs from the head's");
    const DotRowsI8Fn cheap = compute.table != nullptr && compute.table->dot_rows_i8 != nullptr
                                  ? compute.table->dot_rows_i8
                                  : reference_kernels().dot_rows_i8;
    // The integer pass for several rows where the table has one: their float multiply-adds, once
    // per weight and activation row, bound such a step; one row's pass is bound by reading the
    // copy and keeps the float pass's tighter bound (docs/head_bound.md, "The integer pass").
    const DotRowsQ8Fn integer =
        n >= 2 && compute.table != nullptr && cols <= kDotRowsQ8MaxCols ? compute.table->dot_rows_q8 : nullptr;
    const QuantizedActivations quantized = integer != nullptr ? quantize_for_head(x, n, cols) : QuantizedActivations{};
    std::vector<int32_t> y_int(integer != nullptr ? n * rows : 0);
    std::vector<double> x_l1(n), x_l2(n);
    for (size_t j = 0; j < n; ++j) norms(x + j * cols, cols, x_l1[j], x_l2[j]);
    const double gamma = gamma_k(cols), tiny = subnormal_term(cols);

    // Pass 1 (the cheap one, over the pool): every row's interval, per activation row; the best
    // lower bound per chunk. Each unit of the copy's rows meets every activation row while it is
    // in the cache (the integer pass: each row meets them all in one call), so n rows read the
    // copy from memory once.
    std::vector<float> y(n * rows);
    std::vector<double> hi(n * rows);
    std::mutex best_mutex;
    std::vector<double> best(n, -kInf);
    auto cheap_rows = [&](size_t unit_begin, size_t unit_end) {
        std::vector<double> chunk_best(n, -kInf);
        // One activation row, or the integer pass (every row in one call), takes the pool's whole
        // chunk at once; several rows on the float pass take it a unit at a time, every row over
        // the unit before the next, so the unit is read from memory once.
        const size_t step = n == 1 || integer != nullptr ? unit_end - unit_begin : 1;
        for (size_t unit = unit_begin; unit < unit_end; unit += step) {
            const size_t begin = unit * kRowUnit, end = std::min((unit + step) * kRowUnit, rows);
            if (integer != nullptr) integer(compact.q(), cols, quantized.u.data(), n, cols, y_int.data(), rows, begin, end);
            for (size_t j = 0; j < n; ++j) {
                float* yj = y.data() + j * rows;
                double* hij = hi.data() + j * rows;
                if (integer == nullptr) cheap(compact.q(), cols, x + j * cols, yj, begin, end);
                const double d_l2 = integer != nullptr ? quantized.d_l2[j] : 0.0;
                for (size_t o = begin; o < end; ++o) {
                    const CompactRowBound& b = compact.bound(o);
                    const double approx = integer != nullptr
                                              ? static_cast<double>(b.scale) * (quantized.step[j] * static_cast<double>(y_int[j * rows + o]))
                                              : static_cast<double>(b.scale) * yj[o];
                    const double bound = bound_of(b, approx, x_l1[j], x_l2[j], gamma, tiny, d_l2);
                    if (bound == kInf) {
                        hij[o] = kInf;
                        continue;
                    }
                    hij[o] = approx + bound;
                    chunk_best[j] = std::max(chunk_best[j], approx - bound);
                }
            }
        }
        std::lock_guard<std::mutex> lock(best_mutex);
        for (size_t j = 0; j < n; ++j) best[j] = std::max(best[j], chunk_best[j]);
    };
    const size_t units = (rows + kRowUnit - 1) / kRowUnit;
    if (compute.pool != nullptr) compute.pool->parallel_for(units, 1, cheap_rows);
    else cheap_rows(0, units);

    // Pass 2: each activation row's candidates, in ascending order, and their exact logits.
    std::vector<std::pair<uint32_t, uint32_t>> candidates;  // (activation row, head row)
    for (size_t j = 0; j < n; ++j)
        for (size_t o = 0; o < rows; ++o)
            if (hi[j * rows + o] >= best[j]) candidates.emplace_back(static_cast<uint32_t>(j), static_cast<uint32_t>(o));
    const MatmulFn exact = exact_kernel(compute, head);
    // y is reused as the exact logits' home: the kernel writes y[o] for the one output o.
    auto exact_rows = [&](size_t begin, size_t end) {
        for (size_t k = begin; k < end; ++k) {
            const auto [j, o] = candidates[k];
            exact(head, x + j * cols, 1, cols, y.data() + j * rows, rows, o, o + 1);
        }
    };
    if (compute.pool != nullptr && candidates.size() > 32) compute.pool->parallel_for(candidates.size(), 16, exact_rows);
    else exact_rows(0, candidates.size());

    std::vector<BoundedArgmax> out(n);
    std::vector<bool> seen(n, false);
    for (const auto& [j, o] : candidates) {
        BoundedArgmax& pick = out[j];
        ++pick.exact_rows;
        if (!pick.finite) continue;
        const float* yj = y.data() + static_cast<size_t>(j) * rows;
        if (!std::isfinite(yj[o])) {
            pick.finite = false;
            continue;
        }
        if (!seen[j] || yj[o] > yj[static_cast<size_t>(pick.token)]) pick.token = static_cast<int32_t>(o);
        seen[j] = true;
    }
    for (size_t j = 0; j < n; ++j)
        if (!seen[j] && out[j].finite)
            return fail(ErrorKind::internal, "bounded head: no candidate row (a bound was computed wrongly)");
    return out;
}

Expected<BoundedArgmax> bounded_argmax(const CompactHead& compact, const WeightView& head, const Compute& compute,
                                       const float* x) {
    STORMO_TRY_ASSIGN(std::vector<BoundedArgmax> picks, bounded_argmax_rows(compact, head, compute, x, 1));
    return picks.front();
}

}  // namespace stormo
