// The bounded head on adversarial heads: exact ties, ties broken in the last ulp, rows that are
// equal after int8 quantization but not in float, huge and tiny scales, zero rows, negative
// logits everywhere, non-finite rows; the error bound itself; and the skipped-row counter on a
// realistic head. Every token is compared with the full head's argmax (lowest index among
// equals) on the reference kernels and on each kernels plugin usable here.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "head_bound_support.hpp"

namespace stormo::testing {
namespace {

std::vector<float> normal_floats(size_t n, std::mt19937& rng, float sigma = 1.0f) {
    std::normal_distribution<float> d(0.0f, sigma);
    std::vector<float> v(n);
    for (float& f : v) f = d(rng);
    return v;
}

// Rounds each value to the nearest BF16 (so a BF16 head holds exactly these floats).
std::vector<float> to_bf16_values(std::vector<float> v) {
    for (float& f : v) {
        uint32_t b;
        std::memcpy(&b, &f, 4);
        b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
        std::memcpy(&f, &b, 4);
    }
    return v;
}

TEST(HeadBound, ExactTiesGoToTheLowestIndex) {
    std::mt19937 rng(1);
    const size_t rows = 300, cols = 96;
    std::vector<float> w = normal_floats(rows * cols, rng, 0.1f);
    const std::vector<float> x = normal_floats(cols, rng);
    const int32_t best = full_head_argmax(Compute{&reference_kernels(), nullptr, false}, TestHead(w, rows, cols).view(), x);
    // The best row copied above and below it: three identical rows, the lowest must win.
    const size_t low = best > 10 ? 3 : static_cast<size_t>(best) + 1, high = rows - 2;
    std::copy_n(w.begin() + best * static_cast<std::ptrdiff_t>(cols), cols, w.begin() + static_cast<std::ptrdiff_t>(low * cols));
    std::copy_n(w.begin() + best * static_cast<std::ptrdiff_t>(cols), cols, w.begin() + static_cast<std::ptrdiff_t>(high * cols));
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16}) {
        const std::vector<float> values = f == WeightFormat::BF16 ? to_bf16_values(w) : w;
        const TestHead head(values, rows, cols, f);
        expect_bounded_equals_full(head, x, "three equal best rows");
        auto compact = CompactHead::build(head.view(), Compute{&reference_kernels(), nullptr, false});
        ASSERT_TRUE(compact);
        auto pick = bounded_argmax(*compact, head.view(), Compute{&reference_kernels(), nullptr, false}, x.data());
        ASSERT_TRUE(pick);
        EXPECT_EQ(pick->token, static_cast<int32_t>(std::min<size_t>(low, static_cast<size_t>(best))));
    }
}

TEST(HeadBound, TiesBrokenInTheLastUlp) {
    // x = e_0: each logit is w[o][0] exactly. Rows 0..63 hold v, v + 1 ulp, v - 1 ulp, ... in a
    // shuffled order (every row quantizes to the same int8 values), plus far smaller rows.
    const size_t rows = 200, cols = 64;
    std::mt19937 rng(2);
    std::vector<float> w = normal_floats(rows * cols, rng, 0.01f);
    std::vector<float> x(cols, 0.0f);
    x[0] = 1.0f;
    const float v = 0.75f;
    std::vector<int> ulps(64);
    for (int k = 0; k < 64; ++k) ulps[static_cast<size_t>(k)] = k % 3 - 1;  // -1, 0, +1 repeated: ties too
    std::shuffle(ulps.begin(), ulps.end(), rng);
    for (size_t o = 0; o < 64; ++o) {
        float value = v;
        if (ulps[o] > 0) value = std::nextafter(v, 1.0f);
        if (ulps[o] < 0) value = std::nextafter(v, 0.0f);
        w[(o + 40) * cols] = value;
    }
    const TestHead head(w, rows, cols);
    const size_t exact = expect_bounded_equals_full(head, x, "one-ulp near-ties");
    EXPECT_GE(exact, 64u) << "every near-tied row must have been computed exactly";

    // The same with a dense x: the near-tied rows differ in the last ulp of one weight.
    std::vector<float> dense = normal_floats(cols, rng);
    std::vector<float> base = normal_floats(cols, rng, 0.5f);
    for (size_t o = 0; o < 64; ++o) {
        std::copy(base.begin(), base.end(), w.begin() + static_cast<std::ptrdiff_t>((o + 40) * cols));
        float& e = w[(o + 40) * cols + o % cols];
        for (int k = 0; k < std::abs(ulps[o]); ++k) e = std::nextafter(e, ulps[o] > 0 ? 10.0f : -10.0f);
    }
    expect_bounded_equals_full(TestHead(w, rows, cols), dense, "rows one ulp apart, dense x");
}

TEST(HeadBound, RowsEqualAfterQuantizationButNotInFloat) {
    std::mt19937 rng(3);
    const size_t rows = 256, cols = 128;
    // A base row of whole multiples of step = 2^-7 with its largest element at 127 steps, so the
    // scale is exactly the step; every row nudges the other elements by less than 0.4 step, so
    // each rounds back to the base's integer: the int8 rows are all the same, the floats are not.
    const float step = 0x1p-7f;
    std::uniform_int_distribution<int> level(-126, 126);
    std::vector<float> base(cols);
    for (float& b : base) b = static_cast<float>(level(rng)) * step;
    base[17] = 127.0f * step;
    std::uniform_real_distribution<float> small(-0.4f * step, 0.4f * step);
    std::vector<float> w(rows * cols);
    for (size_t o = 0; o < rows; ++o)
        for (size_t i = 0; i < cols; ++i) w[o * cols + i] = i == 17 ? base[i] : base[i] + small(rng);
    const std::vector<float> x = normal_floats(cols, rng);
    auto compact = CompactHead::build(TestHead(w, rows, cols).view(), Compute{&reference_kernels(), nullptr, false});
    ASSERT_TRUE(compact);
    size_t same_q = 0;
    for (size_t o = 1; o < rows; ++o)
        same_q += std::memcmp(compact->q() + o * cols, compact->q(), cols) == 0;
    EXPECT_EQ(same_q, rows - 1) << "the construction makes every int8 row identical";
    const size_t exact = expect_bounded_equals_full(TestHead(w, rows, cols), x, "rows equal in int8");
    EXPECT_GT(exact, rows / 2) << "rows the copy cannot tell apart are computed exactly";
    expect_bounded_equals_full(TestHead(to_bf16_values(w), rows, cols, WeightFormat::BF16), x, "rows equal in int8, BF16");
}

TEST(HeadBound, HugeAndTinyScales) {
    std::mt19937 rng(4);
    const size_t cols = 64;
    // Row groups at scales from 2^-140 (subnormal weights) to 2^118 (a logit near 2^123, past
    // the bound's overflow guard: always computed exactly).
    const std::vector<int> exponents{-140, -126, -100, -60, -20, 0, 20, 60, 90, 99, 100, 110, 118};
    const size_t per = 8;
    const size_t rows = exponents.size() * per;
    std::vector<float> w(rows * cols);
    for (size_t g = 0; g < exponents.size(); ++g) {
        const std::vector<float> r = normal_floats(per * cols, rng, 0.3f);
        for (size_t k = 0; k < r.size(); ++k) w[g * per * cols + k] = std::ldexp(r[k], exponents[g]);
    }
    for (float scale : {1.0f, 0x1p-30f}) {
        std::vector<float> x = normal_floats(cols, rng);
        for (float& v : x) v *= scale;
        expect_bounded_equals_full(TestHead(w, rows, cols), x, "scales 2^-140..2^118");
        // Without the largest groups the 2^90 rows decide, by bound.
        const size_t keep = 9 * per;
        expect_bounded_equals_full(TestHead(std::vector<float>(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(keep * cols)), keep, cols),
                                   x, "scales 2^-140..2^90");
        // The tiny groups alone: products among the subnormals.
        const size_t tiny = 3 * per;
        expect_bounded_equals_full(TestHead(std::vector<float>(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(tiny * cols)), tiny, cols),
                                   x, "scales 2^-140..2^-100");
    }
}

TEST(HeadBound, ZeroRowsAndNegativeEverything) {
    std::mt19937 rng(5);
    const size_t rows = 128, cols = 48;
    std::vector<float> x = normal_floats(cols, rng);
    for (float& v : x) v = std::fabs(v) + 0.01f;
    // Every weight negative: every logit negative; rows 17 and 90 zero: the first zero row wins.
    std::vector<float> w = normal_floats(rows * cols, rng);
    for (float& v : w) v = -std::fabs(v) - 0.001f;
    for (size_t o : {size_t{90}, size_t{17}}) std::fill_n(w.begin() + static_cast<std::ptrdiff_t>(o * cols), cols, 0.0f);
    expect_bounded_equals_full(TestHead(w, rows, cols), x, "negative rows and two zero rows");
    EXPECT_EQ(full_head_argmax(Compute{&reference_kernels(), nullptr, false}, TestHead(w, rows, cols).view(), x), 17);
    // No zero row: the least negative wins.
    std::vector<float> negative = w;
    for (size_t o : {size_t{90}, size_t{17}})
        std::fill_n(negative.begin() + static_cast<std::ptrdiff_t>(o * cols), cols, -1.0f);
    expect_bounded_equals_full(TestHead(negative, rows, cols), x, "every logit negative");
    // Every row zero: every logit ties at 0, token 0.
    const std::vector<float> zeros(rows * cols, 0.0f);
    expect_bounded_equals_full(TestHead(zeros, rows, cols), x, "every row zero");
    auto compact = CompactHead::build(TestHead(zeros, rows, cols).view(), Compute{&reference_kernels(), nullptr, false});
    ASSERT_TRUE(compact);
    auto pick = bounded_argmax(*compact, TestHead(zeros, rows, cols).view(), Compute{&reference_kernels(), nullptr, false}, x.data());
    ASSERT_TRUE(pick);
    EXPECT_EQ(pick->token, 0);
    // A zero activation row: every logit is 0 whatever the weights.
    expect_bounded_equals_full(TestHead(w, rows, cols), std::vector<float>(cols, 0.0f), "x = 0");
}

TEST(HeadBound, NonFiniteRowsAreAlwaysComputedAndReported) {
    std::mt19937 rng(6);
    const size_t rows = 64, cols = 32;
    std::vector<float> w = normal_floats(rows * cols, rng, 0.01f);
    const std::vector<float> x = normal_floats(cols, rng);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        std::vector<float> poisoned = w;
        poisoned[40 * cols + 5] = bad;  // a small row otherwise: the bound alone would skip it
        const TestHead head(poisoned, rows, cols);
        for (const Compute& c : head_computes().computes) {
            auto compact = CompactHead::build(head.view(), c);
            ASSERT_TRUE(compact);
            EXPECT_EQ(compact->bound(40).err_max, std::numeric_limits<float>::infinity());
            auto pick = bounded_argmax(*compact, head.view(), c, x.data());
            ASSERT_TRUE(pick);
            EXPECT_FALSE(pick->finite) << "the full head's logits hold a non-finite value here";
        }
    }
}

TEST(HeadBound, TheIntegerPassBoundHoldsOnEveryRow) {
    // The integer pass (quantize_for_head, dot_rows_q8): |exact - scale * step * q.p| <=
    // row_error_bound with the activations' d_l2, on rows of many magnitudes and activation rows
    // with an outlier, a zero row and one of a single value, for each plugin's exact kernel.
    std::mt19937 rng(17);
    for (size_t cols : {size_t{1}, size_t{7}, size_t{32}, size_t{100}, size_t{2880}}) {
        const size_t rows = 64, n = 4;
        std::vector<float> w = normal_floats(rows * cols, rng);
        std::uniform_int_distribution<int> e(-30, 30);
        for (size_t o = 0; o < rows; ++o)
            for (size_t i = 0; i < cols; ++i) w[o * cols + i] = std::ldexp(w[o * cols + i], o % 2 ? e(rng) : 0);
        std::vector<float> x = normal_floats(n * cols, rng);
        x[cols / 2] = 40.0f;                                   // an outlier in row 0
        std::fill_n(x.begin() + static_cast<std::ptrdiff_t>(cols), cols, 0.0f);  // row 1 all zero
        std::fill_n(x.begin() + static_cast<std::ptrdiff_t>(2 * cols), cols, -3.0f);  // row 2 one value
        const QuantizedActivations quantized = quantize_for_head(x.data(), n, cols);
        const TestHead head(w, rows, cols);
        for (size_t k = 0; k < head_computes().computes.size(); ++k) {
            const Compute& c = head_computes().computes[k];
            auto compact = CompactHead::build(head.view(), c);
            ASSERT_TRUE(compact);
            std::vector<float> exact(n * rows);
            matmul(c, head.view(), x.data(), n, exact.data());
            std::vector<int32_t> cheap(n * rows);
            reference_kernels().dot_rows_q8(compact->q(), cols, quantized.u.data(), n, cols, cheap.data(), rows, 0, rows);
            for (size_t j = 0; j < n; ++j) {
                double l1 = 0.0, l2 = 0.0;
                for (size_t i = 0; i < cols; ++i) {
                    l1 += std::fabs(x[j * cols + i]);
                    l2 += static_cast<double>(x[j * cols + i]) * x[j * cols + i];
                }
                l1 *= 1.0 + 1e-12;
                l2 = std::sqrt(l2) * (1.0 + 1e-12);
                for (size_t o = 0; o < rows; ++o) {
                    const double approx = static_cast<double>(compact->bound(o).scale) * (quantized.step[j] * cheap[j * rows + o]);
                    const double bound = row_error_bound(compact->bound(o), approx, l1, l2, cols, quantized.d_l2[j]);
                    EXPECT_LE(std::fabs(exact[j * rows + o] - approx), bound)
                        << "row " << o << ", activation row " << j << ", cols " << cols << ", " << head_computes().names[k];
                }
            }
        }
    }
}

TEST(HeadBound, TheBoundHoldsOnEveryRow) {
    // |exact - approx| <= row_error_bound on random rows of many magnitudes, for the reference
    // and each plugin's cheap and exact kernels.
    std::mt19937 rng(7);
    for (size_t cols : {size_t{1}, size_t{7}, size_t{32}, size_t{100}, size_t{2880}}) {
        const size_t rows = 64;
        std::vector<float> w = normal_floats(rows * cols, rng);
        std::uniform_int_distribution<int> e(-30, 30);
        for (size_t o = 0; o < rows; ++o)
            for (size_t i = 0; i < cols; ++i) w[o * cols + i] = std::ldexp(w[o * cols + i], o % 2 ? e(rng) : 0);
        const std::vector<float> x = normal_floats(cols, rng);
        double l1 = 0.0, l2 = 0.0;
        for (float v : x) {
            l1 += std::fabs(v);
            l2 += static_cast<double>(v) * v;
        }
        l1 *= 1.0 + 1e-12;
        l2 = std::sqrt(l2) * (1.0 + 1e-12);
        const TestHead head(w, rows, cols);
        for (size_t k = 0; k < head_computes().computes.size(); ++k) {
            const Compute& c = head_computes().computes[k];
            auto compact = CompactHead::build(head.view(), c);
            ASSERT_TRUE(compact);
            std::vector<float> exact(rows), cheap(rows);
            matmul(c, head.view(), x.data(), 1, exact.data());
            c.table->dot_rows_i8(compact->q(), cols, x.data(), cheap.data(), 0, rows);
            for (size_t o = 0; o < rows; ++o) {
                const double approx = static_cast<double>(compact->bound(o).scale) * cheap[o];
                const double bound = row_error_bound(compact->bound(o), approx, l1, l2, cols);
                EXPECT_LE(std::fabs(exact[o] - approx), bound) << "row " << o << ", cols " << cols << ", " << head_computes().names[k];
                // And not uselessly loose on rows of one magnitude: well under the logit's own
                // scale ||w|| ||x|| (rows spread over 2^60 spend the int8 range on one element).
                if (o % 2) continue;
                double wn = 0.0;
                for (size_t i = 0; i < cols; ++i) wn += static_cast<double>(w[o * cols + i]) * w[o * cols + i];
                EXPECT_LT(bound, 0.05 * std::sqrt(wn) * l2 + 1e-30) << "row " << o << ", cols " << cols;
            }
        }
    }
}

TEST(HeadBound, MostRowsAreSkippedOnARealisticHead) {
    // A head of 32768 x 512 with normal weights (std 1/sqrt(512)) and a unit-RMS x: logits of
    // RMS 1, like a real model's. The compact copy must rule out nearly every row.
    std::mt19937 rng(8);
    const size_t rows = 32768, cols = 512;
    const std::vector<float> w = to_bf16_values(normal_floats(rows * cols, rng, 1.0f / std::sqrt(512.0f)));
    const TestHead head(w, rows, cols, WeightFormat::BF16);
    for (int trial = 0; trial < 3; ++trial) {
        const std::vector<float> x = normal_floats(cols, rng);
        const size_t exact = expect_bounded_equals_full(head, x, "realistic head");
        EXPECT_LT(exact, rows / 100) << "more than 1% of the rows computed exactly";
        std::printf("[ head bound ] realistic 32768 x 512 BF16 head: %zu rows computed exactly (%.3f%%)\n", exact,
                    100.0 * static_cast<double>(exact) / rows);
    }
}

TEST(HeadBound, SameTokenForAnyThreadCount) {
    std::mt19937 rng(9);
    const size_t rows = 5000, cols = 200;
    const TestHead head(normal_floats(rows * cols, rng, 0.07f), rows, cols);
    const std::vector<float> x = normal_floats(cols, rng);
    int32_t first = -1;
    for (size_t threads : {size_t{1}, size_t{2}, size_t{3}}) {
        WorkerPool pool(threads);
        const Compute c{&reference_kernels(), &pool, false};
        auto compact = CompactHead::build(head.view(), c);
        ASSERT_TRUE(compact);
        auto pick = bounded_argmax(*compact, head.view(), c, x.data());
        ASSERT_TRUE(pick);
        EXPECT_EQ(pick->token, full_head_argmax(c, head.view(), x));
        if (first < 0) first = pick->token;
        EXPECT_EQ(pick->token, first) << threads << " threads";
    }
}

TEST(HeadBound, SeveralRowsPickEachRowsOwnToken) {
    // A verify block's or a batch's rows share one cheap pass over the copy (the integer pass
    // where the table has one): each row's pick is its own full-head argmax, on the reference and
    // each plugin, with and without a pool, also when rows tie exactly (two equal activation
    // rows) and when one head row is NaN.
    std::mt19937 rng(10);
    const size_t rows = 3000, cols = 96, n = 5;
    std::vector<float> w = to_bf16_values(normal_floats(rows * cols, rng, 0.1f));
    std::vector<float> x = normal_floats(n * cols, rng);
    std::copy_n(x.begin(), cols, x.begin() + 3 * cols);  // rows 0 and 3 equal
    for (const bool poisoned : {false, true}) {
        if (poisoned) w[1234 * cols + 5] = std::numeric_limits<float>::quiet_NaN();
        const TestHead head(w, rows, cols, WeightFormat::BF16);
        for (size_t k = 0; k < head_computes().computes.size(); ++k) {
            for (size_t threads : {size_t{0}, size_t{2}}) {
                WorkerPool pool(std::max<size_t>(threads, 1));
                Compute c = head_computes().computes[k];
                c.pool = threads ? &pool : nullptr;
                auto compact = CompactHead::build(head.view(), c);
                ASSERT_TRUE(compact);
                auto picks = bounded_argmax_rows(*compact, head.view(), c, x.data(), n);
                ASSERT_TRUE(picks) << picks.error().message;
                ASSERT_EQ(picks->size(), n);
                for (size_t j = 0; j < n; ++j) {
                    const std::vector<float> xj(x.begin() + static_cast<ptrdiff_t>(j * cols),
                                                x.begin() + static_cast<ptrdiff_t>((j + 1) * cols));
                    auto one = bounded_argmax(*compact, head.view(), c, xj.data());
                    ASSERT_TRUE(one);
                    EXPECT_EQ((*picks)[j].finite, one->finite) << "row " << j << ", " << head_computes().names[k];
                    EXPECT_FALSE(poisoned && (*picks)[j].finite) << "a NaN row is always computed";
                    if (poisoned) continue;
                    EXPECT_EQ((*picks)[j].token, full_head_argmax(c, head.view(), xj)) << "row " << j << ", " << head_computes().names[k];
                    EXPECT_EQ((*picks)[j].token, one->token);
                    // Several rows take the integer pass where the table has one, a lone row the
                    // float pass: the same token, other candidates.
                    if (c.table->dot_rows_q8 == nullptr) EXPECT_EQ((*picks)[j].exact_rows, one->exact_rows);
                }
                if (!poisoned) EXPECT_EQ((*picks)[0].token, (*picks)[3].token);
            }
        }
    }
}

TEST(HeadBound, ANonFiniteActivationRowAmongSeveralIsNotFiniteAlone) {
    // The integer pass quantizes every activation row; a row holding NaN or Inf comes out as the
    // full head's non-finite answer and the other rows keep their own tokens.
    std::mt19937 rng(23);
    const size_t rows = 500, cols = 64, n = 4;
    const std::vector<float> w = to_bf16_values(normal_floats(rows * cols, rng, 0.1f));
    const TestHead head(w, rows, cols, WeightFormat::BF16);
    for (const float poison : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
        std::vector<float> x = normal_floats(n * cols, rng);
        x[2 * cols + 7] = poison;
        for (size_t k = 0; k < head_computes().computes.size(); ++k) {
            const Compute& c = head_computes().computes[k];
            auto compact = CompactHead::build(head.view(), c);
            ASSERT_TRUE(compact);
            auto picks = bounded_argmax_rows(*compact, head.view(), c, x.data(), n);
            ASSERT_TRUE(picks) << picks.error().message;
            for (size_t j = 0; j < n; ++j) {
                const std::vector<float> xj(x.begin() + static_cast<ptrdiff_t>(j * cols),
                                            x.begin() + static_cast<ptrdiff_t>((j + 1) * cols));
                EXPECT_EQ((*picks)[j].finite, j != 2) << "row " << j << ", " << head_computes().names[k];
                if (j != 2) EXPECT_EQ((*picks)[j].token, full_head_argmax(c, head.view(), xj)) << "row " << j;
            }
        }
    }
}

TEST(HeadBound, UnsupportedHeadsSayWhy) {
    const std::vector<float> w(64, 1.0f);
    TestHead head(w, 2, 32);
    WeightView in_out = head.view();
    in_out.layout = Layout::in_out;
    EXPECT_TRUE(CompactHead::unsupported(in_out, Compute{&reference_kernels(), nullptr, false}).has_value());
    WeightView mxfp4 = head.view();
    mxfp4.format = WeightFormat::MXFP4;
    EXPECT_TRUE(CompactHead::unsupported(mxfp4, Compute{&reference_kernels(), nullptr, false}).has_value());
    EXPECT_FALSE(CompactHead::unsupported(head.view(), Compute{&reference_kernels(), nullptr, true}).has_value())
        << "the integer road has no BF16/F32 kernel: an F32 head stays on the float road";
    EXPECT_FALSE(CompactHead::build(in_out, Compute{&reference_kernels(), nullptr, false}).has_value());
}

}  // namespace
}  // namespace stormo::testing
