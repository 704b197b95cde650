#pragma once
// The compact copy of the LM head that the bounded head reads instead of the whole matrix
// (docs/head_bound.md): each row as int8 with one float scale, and per row the constants that
// bound, for any activation row x, how far the cheap logit scale * sum(q * x) can lie from the
// exact float logit the full head would compute. Built once at load from the decoded weights.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/kernels.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

// Per row o, all rounded up (a bound stays a bound): with w the decoded row and e = w - scale * q
// the quantization error (real numbers),
//   err_max >= max_i |e_i|,  err_l2 >= ||e||_2,  q_l2 >= ||q||_2.
// A row holding NaN or infinity gets err_max = +inf: it is always computed exactly, so a
// non-finite logit fails the request as it would with the full head.
struct CompactRowBound {
    float scale = 0.0f;
    float err_max = 0.0f;
    float err_l2 = 0.0f;
    float q_l2 = 0.0f;
};

class STORMO_API CompactHead {
public:
    // Why a head cannot be read by bound, or nullopt when it can. The exact row must be what the
    // full head computes for that row and the rounding bound must hold for its kernel: float-road
    // out_in matrices of F32, BF16, F16 or FP8 (an MXFP4 kernel scales block sums by powers of two
    // after summing, which can scale an underflow's error up; an integer-road head rounds its
    // activations, which the bound does not cover).
    static std::optional<std::string> unsupported(const WeightView& head, const Compute& compute);

    // What a copy of a rows x cols head would cost (bytes() of the built copy), and what one pass
    // over the head in its own format reads (nullopt where no size is claimed).
    static uint64_t bytes_for(size_t rows, size_t cols);
    static uint64_t bytes_for(const WeightView& head);
    static std::optional<uint64_t> own_bytes(const WeightView& head);
    // Whether a copy is smaller than the head's own `own_bytes` (0: unknown, copy). A head whose
    // rows are no larger (a GGUF Q6_K or Q8_0 head) is read in full: the bound would read more,
    // and then the exact rows on top. The engine and `stormo inspect` both decide by this.
    static bool copy_saves_bytes(uint64_t own_bytes, size_t rows, size_t cols);

    // Quantizes every row of `head` (decoded exactly by the reference row decoder), split over
    // the pool. Fails when unsupported() names a reason or memory runs out.
    static Expected<CompactHead> build(const WeightView& head, const Compute& compute);

    size_t rows() const { return rows_; }
    size_t cols() const { return cols_; }
    const int8_t* q() const { return reinterpret_cast<const int8_t*>(q_->data()); }
    const CompactRowBound& bound(size_t row) const { return bounds_[row]; }
    // What the copy costs in RAM and what one full cheap pass reads: the int8 rows and the
    // per-row constants.
    uint64_t bytes() const { return static_cast<uint64_t>(rows_) * cols_ + bounds_.size() * sizeof(CompactRowBound); }

private:
    size_t rows_ = 0;
    size_t cols_ = 0;
    std::shared_ptr<AlignedBuffer> q_;  // [rows, cols]; shared so the copy stays movable and cheap
    std::vector<CompactRowBound> bounds_;
};

}  // namespace stormo
