// The two kernel-table entries behind the bounded head and the RAM probe, for the reference and
// each kernels plugin usable here: dot_rows_i8 within the rounding bound the head assumes for any
// summation order, and xor_reduce equal to the reference on every length and content.
#include <cmath>
#include <random>

#include "head_bound_support.hpp"
#include "stormo/tensor.hpp"

namespace stormo::testing {
namespace {

TEST(HeadBoundKernels, DotRowsI8StaysWithinTheRoundingBoundOfAnyOrder) {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> byte(-128, 127);
    for (const size_t cols : {size_t{1}, size_t{2}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16}, size_t{17}, size_t{31}, size_t{32}, size_t{33}, size_t{48}, size_t{49},
                              size_t{63}, size_t{64}, size_t{65}, size_t{100}, size_t{2880}}) {
        const size_t rows = 37;  // odd: the last row of a pair runs alone
        std::vector<int8_t> q(rows * cols);
        for (int8_t& v : q) v = static_cast<int8_t>(byte(rng));
        std::vector<float> x = random_floats(cols, rng, -3.0f, 3.0f);
        x[0] = 1e-40f;  // a subnormal input
        const double k = static_cast<double>(2 * cols + 64) * 0x1p-24;
        const double gamma = k / (1.0 - k);
        const HeadComputes& hc = head_computes();
        for (size_t c = 0; c < hc.computes.size(); ++c) {
            std::vector<float> y(rows, -1.0f);
            // Outputs [3, rows): the range's first row is not row 0, and rows before it are untouched.
            hc.computes[c].table->dot_rows_i8(q.data(), cols, x.data(), y.data(), 3, rows);
            for (size_t o = 0; o < 3; ++o) EXPECT_EQ(y[o], -1.0f) << "row outside the range written";
            for (size_t o = 3; o < rows; ++o) {
                double exact = 0.0, abs_sum = 0.0;
                for (size_t i = 0; i < cols; ++i) {
                    exact += static_cast<double>(q[o * cols + i]) * x[i];
                    abs_sum += std::fabs(static_cast<double>(q[o * cols + i]) * x[i]);
                }
                EXPECT_LE(std::fabs(y[o] - exact), gamma * abs_sum + 3.0 * static_cast<double>(cols) * 0x1p-149)
                    << hc.names[c] << ", cols " << cols << ", row " << o;
            }
        }
    }
}

TEST(HeadBoundKernels, XorReduceEqualsTheReference) {
    std::mt19937_64 rng(12);
    AlignedBuffer buffer(size_t{1} << 20, 64);
    auto* words = reinterpret_cast<uint64_t*>(buffer.data());
    for (size_t i = 0; i < buffer.size() / 8; ++i) words[i] = rng();
    const XorReduceFn reference = reference_kernels().xor_reduce;
    for (const size_t n : {size_t{256}, size_t{512}, size_t{4096}, size_t{4352}, size_t{1} << 20}) {
        uint64_t expected = 0;
        for (size_t i = 0; i < n / 8; ++i) expected ^= words[i];
        EXPECT_EQ(reference(buffer.data(), n), expected) << n;
        const HeadComputes& hc = head_computes();
        for (size_t c = 0; c < hc.computes.size(); ++c)
            EXPECT_EQ(hc.computes[c].table->xor_reduce(buffer.data(), n), expected) << hc.names[c] << ", " << n << " bytes";
    }
}

}  // namespace
}  // namespace stormo::testing
