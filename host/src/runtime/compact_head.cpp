#include "runtime/compact_head.hpp"

#include "compute/matrix_bytes.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>

namespace stormo {
namespace {

// The smallest float >= v (v >= 0): the per-row constants are computed in double and must stay
// upper bounds once stored as floats.
float round_up(double v) {
    if (!(v < static_cast<double>(std::numeric_limits<float>::max()))) return std::numeric_limits<float>::infinity();
    const float f = static_cast<float>(v);
    return static_cast<double>(f) >= v ? f : std::nextafter(f, std::numeric_limits<float>::infinity());
}

// One row: scale = max|w| / 127, q = w * 127 / max|w| rounded to nearest, in [-127, 127].
// The bound does not rely on how q was chosen: err_max and err_l2 are measured on the actual
// e_i = w_i - scale * q_i. scale * q_i is exact in double (24 + 7 significant bits), and the
// subtraction and the sums below round by at most 2^-53 relative each, so inflating the double
// results by (1 + cols * 2^-50) keeps them upper bounds of the real values.
CompactRowBound quantize_row(const float* w, size_t cols, int8_t* q) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    float amax = 0.0f;
    bool finite = true;
    for (size_t i = 0; i < cols; ++i) {
        if (!std::isfinite(w[i])) finite = false;
        amax = std::max(amax, std::fabs(w[i]));
    }
    CompactRowBound b;
    if (!finite) {
        std::fill(q, q + cols, int8_t{0});
        b.err_max = b.err_l2 = b.q_l2 = kInf;
        return b;
    }
    const float scale = amax / 127.0f;
    // q_i = w_i * (127 / amax) rounded to nearest: a multiply rather than a division, and the
    // rounding by adding and subtracting 1.5 * 2^23 (exact for |v| <= 2^22, ties to even) rather
    // than a libm call: 201088 x 2880 of them at every load of gpt-oss-20b. Any q would do for the
    // bound, which is measured on the q chosen.
    float inverse = amax > 0.0f && scale > 0.0f ? 127.0f / amax : 0.0f;
    // Below about 2^-121 the inverse overflows: such a row keeps q = 0 (its error, the row
    // itself, is measured like any other; the bound stays valid, only looser).
    if (!(inverse < kInf)) inverse = 0.0f;
    constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
    // Four partial maxima and sums: one chain of double additions would cost its latency per
    // value. (Rounding of the sums is covered by the inflation below whatever their order.)
    double err_max[4] = {}, err_sq[4] = {};
    int64_t q_sq = 0;
    for (size_t i = 0; i < cols; ++i) {
        const float v = std::clamp(w[i] * inverse, -127.0f, 127.0f);
        const int r = static_cast<int>((v + kRound) - kRound);
        q[i] = static_cast<int8_t>(r);
        const double e = std::fabs(static_cast<double>(w[i]) - static_cast<double>(scale) * r);
        err_max[i % 4] = std::max(err_max[i % 4], e);
        err_sq[i % 4] += e * e;
        q_sq += r * r;
    }
    const double max_e = std::max(std::max(err_max[0], err_max[1]), std::max(err_max[2], err_max[3]));
    const double sum_sq = (err_sq[0] + err_sq[1]) + (err_sq[2] + err_sq[3]);
    const double inflate = 1.0 + static_cast<double>(cols + 4) * 0x1p-50;
    b.scale = scale;
    b.err_max = round_up(max_e * inflate);
    b.err_l2 = round_up(std::sqrt(sum_sq) * inflate);
    b.q_l2 = round_up(std::sqrt(static_cast<double>(q_sq)) * inflate);  // q_sq is exact (< 2^53)
    return b;
}

}  // namespace

std::optional<std::string> CompactHead::unsupported(const WeightView& head, const Compute& compute) {
    const size_t f = static_cast<size_t>(head.format);
    if (head.layout != Layout::out_in) return std::string("the head is not an out_in matrix");
    if (head.format == WeightFormat::MXFP4)
        return std::string("an MXFP4 head's kernels scale block sums after summing (the rounding bound assumes no underflow is scaled up)");
    if (f >= kWeightFormatCount) return std::string("unknown weight format");
    if (compute.int8_activations && compute.table != nullptr && compute.table->matmul_q8[f] != nullptr)
        return std::string("the head runs on the integer road, whose activation rounding the bound does not cover");
    if (head.rows == 0 || head.cols == 0) return std::string("the head is empty");
    // gamma_k below needs k * 2^-24 < 1 with k = 2 cols + 64.
    if (head.cols > (size_t{1} << 20)) return std::string("rows longer than 2^20 values");
    if (reference_kernels().row_to_f32[f] == nullptr) return std::string("no row decoder for the head's format");
    return std::nullopt;
}

uint64_t CompactHead::bytes_for(size_t rows, size_t cols) {
    return static_cast<uint64_t>(rows) * cols + static_cast<uint64_t>(rows) * sizeof(CompactRowBound);
}

uint64_t CompactHead::bytes_for(const WeightView& head) { return bytes_for(head.rows, head.cols); }

std::optional<uint64_t> CompactHead::own_bytes(const WeightView& head) {
    // An MXFP4 head is never copied (unsupported() says why), so no size is claimed for it.
    if (head.format == WeightFormat::MXFP4) return std::nullopt;
    const uint64_t bytes = matrix_bytes(head);
    return bytes == 0 ? std::nullopt : std::optional<uint64_t>(bytes);
}

bool CompactHead::copy_saves_bytes(uint64_t own_bytes, size_t rows, size_t cols) {
    return own_bytes == 0 || own_bytes > bytes_for(rows, cols);
}

Expected<CompactHead> CompactHead::build(const WeightView& head, const Compute& compute) {
    if (auto why = unsupported(head, compute)) return fail(ErrorKind::invalid_argument, "compact head: " + *why);
    CompactHead out;
    out.rows_ = head.rows;
    out.cols_ = head.cols;
    try {
        out.q_ = std::make_shared<AlignedBuffer>(head.rows * head.cols);
        out.bounds_.resize(head.rows);
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::resource, "compact head: cannot allocate " + std::to_string(head.rows * head.cols) +
                                             " bytes for the int8 copy of the head");
    }
    // The reference decoder defines the weights' values (every plugin's decoder is tested equal).
    const RowToF32Fn decode = reference_kernels().row_to_f32[static_cast<size_t>(head.format)];
    auto* q = reinterpret_cast<int8_t*>(out.q_->data());
    auto rows = [&](size_t begin, size_t end) {
        std::vector<float> w(head.cols);
        for (size_t o = begin; o < end; ++o) {
            decode(head, o, w.data());
            out.bounds_[o] = quantize_row(w.data(), head.cols, q + o * head.cols);
        }
    };
    if (compute.pool != nullptr) compute.pool->parallel_for(head.rows, 64, rows);
    else rows(0, head.rows);
    return out;
}

}  // namespace stormo
