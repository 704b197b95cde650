#pragma once
// Greedy decoding's head read by bound (docs/head_bound.md): the argmax of the exact logits
// W x, the lowest index among equals (stormo::argmax), computed from the compact int8 copy of W
// plus exact float rows only where the copy cannot decide.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/compact_head.hpp"
#include "stormo/error.hpp"
#include "stormo/kernels.hpp"

namespace stormo {

struct BoundedArgmax {
    int32_t token = 0;
    size_t exact_rows = 0;  // rows whose exact logit was computed (the others were skipped)
    bool finite = true;     // false: an exact logit was NaN or infinite (token is then meaningless)
};

// x: one row of head.cols floats (the final-normed hidden state, finite). `head` is the matrix
// the compact copy was built from; its exact rows are computed with the kernel stormo::matmul
// would use, one output at a time (a row's value never depends on the output range), so they
// have the full head's bits. Every row whose upper bound reaches the best lower bound is
// computed exactly, and the result is exactly argmax(matmul(head, x)). A non-finite exact logit
// (a row of NaN or infinite weights, an overflow) clears `finite`: the full head's logits would
// hold it too, and the caller fails the request as it would for them.
Expected<BoundedArgmax> bounded_argmax(const CompactHead& compact, const WeightView& head, const Compute& compute,
                                       const float* x);

// The same for n activation rows at x (n x head.cols floats, each finite), one pick per row:
// the cheap pass meets every row in each cache-sized unit of the compact copy, so a verify block
// or a batch of decode rows reads the copy once, not once per row.
Expected<std::vector<BoundedArgmax>> bounded_argmax_rows(const CompactHead& compact, const WeightView& head,
                                                       const Compute& compute, const float* x, size_t n);

// The bound of one row (exposed for the tests): for the exact float logit L of row o and the
// cheap value approx = scale * y with y = the cheap pass's float sum, |L - approx| <= the value.
// x_l1 and x_l2 are upper bounds of ||x||_1 and ||x||_2; cols is the row length. +inf when the
// row cannot be bounded (non-finite weights, a possible overflow). For the integer pass, approx =
// scale * step * y with y = sum q_i p_i, and d_l2 is QuantizedActivations::d_l2 of the row.
double row_error_bound(const CompactRowBound& b, double approx, double x_l1, double x_l2, size_t cols,
                       double d_l2 = 0.0);

// Activation rows as the integer pass takes them: p_i = round(x_i / step) in [-127, 127] with
// step = max |x_i| / 127, stored as u_i = p_i + 128; d_l2 bounds ||x - step p||_2 from above. A
// zero row or one that is not finite keeps p = 0 and step 0 (d_l2 = ||x||_2).
struct QuantizedActivations {
    std::vector<uint8_t> u;     // [n, cols]
    std::vector<double> step;   // [n]
    std::vector<double> d_l2;   // [n]
};
QuantizedActivations quantize_for_head(const float* x, size_t n, size_t cols);

}  // namespace stormo
