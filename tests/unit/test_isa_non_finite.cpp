// NaN and Inf travel through every kernel a plugin installs as they travel through the reference:
// for inputs holding NaN, +Inf or -Inf, each output is non-finite exactly where the reference's
// is. The forward pass's non-finite check is what turns a poisoned checkpoint into an error naming
// the layer; a kernel that drops a NaN (a vector max or min that returns its other operand, a
// clamp before an exponential, a skipped zero weight) turns it into a wrong answer with exit 0.
//
// Finiteness, not bits, is compared: where both are non-finite the class may differ (an Inf in one
// summation order is NaN in another only when +Inf and -Inf meet, which both orders then see).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compute/worker_pool.hpp"
#include "kernel_plugin_loader.hpp"
#include "kernel_test_support.hpp"
#include "stormo/dtype.hpp"
#include "stormo/kernels.hpp"

namespace stormo {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
// What an input slot is overwritten with; `none` leaves the random value.
const float kPoisons[] = {kNaN, kInf, -kInf};

std::string poison_name(float v) { return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"; }

// The first index where one side is finite and the other is not, or -1.
long first_finiteness_difference(const std::vector<float>& ref, const std::vector<float>& isa) {
    for (size_t i = 0; i < ref.size(); ++i)
        if (std::isfinite(ref[i]) != std::isfinite(isa[i])) return static_cast<long>(i);
    return -1;
}

#define EXPECT_SAME_FINITENESS(ref, isa, what)                                                                  \
    do {                                                                                                        \
        const long bad = first_finiteness_difference(ref, isa);                                                 \
        EXPECT_EQ(bad, -1) << (what) << ": output " << bad << " is " << (bad >= 0 ? (ref)[bad] : 0.0f)            \
                          << " in the reference, " << (bad >= 0 ? (isa)[bad] : 0.0f) << " in the plugin";        \
    } while (0)

// The sizes that reach every vector loop's full steps, 8-lane steps and masked tails.
std::vector<size_t> vector_sizes() {
    std::vector<size_t> sizes;
    for (size_t n = 1; n <= 40; ++n) sizes.push_back(n);
    for (size_t n : {63, 64, 65, 100, 129, 2880}) sizes.push_back(n);
    return sizes;
}

// Where a poison goes in a vector of n: the first value, one inside, the last (often a tail lane).
std::vector<size_t> poison_places(size_t n) {
    std::vector<size_t> at{0};
    if (n > 2) at.push_back(n / 2 + 1 < n ? n / 2 + 1 : n / 2);
    if (n > 1) at.push_back(n - 1);
    return at;
}

void check_vector_kernels(const KernelTable& isa, const std::string& plugin) {
    const KernelTable& ref = reference_kernels();
    std::mt19937 rng(41);
    for (size_t n : vector_sizes())
        for (size_t at : poison_places(n))
            for (float poison : kPoisons) {
                const std::string what = plugin + ", n " + std::to_string(n) + ", " + poison_name(poison) + " at " +
                                         std::to_string(at);
                std::vector<float> a = testing::random_floats(n, rng, -3.0f, 3.0f);
                std::vector<float> b = testing::random_floats(n, rng, -3.0f, 3.0f);
                std::vector<float> a_bad = a;
                a_bad[at] = poison;

                // Attention scores: a masked key (-inf) beside the poison, as attention has them.
                std::vector<float> s_ref = a_bad, s_isa = a_bad;
                if (n > 3 && at != 1) s_ref[1] = s_isa[1] = -kInf;
                ref.softmax(s_ref.data(), n);
                isa.softmax(s_isa.data(), n);
                EXPECT_SAME_FINITENESS(s_ref, s_isa, "softmax, " + what);

                for (bool in_weight : {false, true}) {
                    std::vector<float> r(n), s(n);
                    const std::vector<float>& x = in_weight ? a : a_bad;
                    std::vector<float> w = b;
                    if (in_weight) w[at] = poison;
                    ref.rmsnorm(x.data(), w.data(), n, 1e-5f, r.data());
                    isa.rmsnorm(x.data(), w.data(), n, 1e-5f, s.data());
                    EXPECT_SAME_FINITENESS(r, s, std::string("rmsnorm (") + (in_weight ? "weight" : "x") + "), " + what);
                }

                EXPECT_SAME_FINITENESS(std::vector<float>{ref.dot(a_bad.data(), b.data(), n)},
                                       std::vector<float>{isa.dot(a_bad.data(), b.data(), n)}, "dot, " + what);
                EXPECT_SAME_FINITENESS(std::vector<float>{ref.dot(b.data(), a_bad.data(), n)},
                                       std::vector<float>{isa.dot(b.data(), a_bad.data(), n)}, "dot (b), " + what);

                for (int where = 0; where < 3; ++where) {  // the poison in x, in y, or the scalar
                    std::vector<float> r = where == 1 ? a_bad : b, s = r;
                    const std::vector<float>& x = where == 0 ? a_bad : a;
                    const float scale = where == 2 ? poison : 0.37f;
                    ref.axpy(scale, x.data(), r.data(), n);
                    isa.axpy(scale, x.data(), s.data(), n);
                    EXPECT_SAME_FINITENESS(r, s, "axpy (" + std::to_string(where) + "), " + what);
                }

                std::vector<float> r = a_bad, s = a_bad;
                ref.silu(r.data(), n);
                isa.silu(s.data(), n);
                EXPECT_SAME_FINITENESS(r, s, "silu, " + what);
            }
}

// dot_many and axpy_many over a KV run whose query, one cached row, or one weight is poisoned.
void check_attention_kernels(const KernelTable& isa, const std::string& plugin) {
    const KernelTable& ref = reference_kernels();
    std::mt19937 rng(43);
    for (size_t n : {31, 32, 64, 72, 128})
        for (size_t n_rows : {1, 7, 9, 17})
            for (float poison : kPoisons)
                for (int where = 0; where < 3; ++where) {
                    const std::string what = plugin + ", head size " + std::to_string(n) + ", rows " +
                                             std::to_string(n_rows) + ", " + poison_name(poison) + " in " +
                                             (where == 0 ? "a query" : where == 1 ? "a cached row" : "a weight");
                    const size_t n_q = 3, stride = n + 3;
                    std::vector<float> q = testing::random_floats(n_q * stride, rng, -3.0f, 3.0f);
                    std::vector<float> rows = testing::random_floats(n_rows * stride, rng, -3.0f, 3.0f);
                    std::vector<float> weights = testing::random_floats(n_q * n_rows, rng, 0.0f, 1.0f);
                    if (where == 0) q[stride + n - 1] = poison;
                    if (where == 1) rows[(n_rows - 1) * stride + n / 2] = poison;
                    if (where == 2) weights[n_rows + n_rows / 2] = poison;

                    std::vector<float> r(n_q * n_rows), s(n_q * n_rows);
                    ref.dot_many(q.data(), n_q, stride, rows.data(), n_rows, stride, n, r.data(), n_rows);
                    isa.dot_many(q.data(), n_q, stride, rows.data(), n_rows, stride, n, s.data(), n_rows);
                    EXPECT_SAME_FINITENESS(r, s, "dot_many, " + what);

                    std::vector<float> y_ref = testing::random_floats(n_q * stride, rng), y_isa = y_ref;
                    ref.axpy_many(weights.data(), n_q, n_rows, rows.data(), n_rows, stride, n, y_ref.data(), stride);
                    isa.axpy_many(weights.data(), n_q, n_rows, rows.data(), n_rows, stride, n, y_isa.data(), stride);
                    EXPECT_SAME_FINITENESS(y_ref, y_isa, "axpy_many, " + what);
                }
}

// Activation rows: row r clean when r % 4 == 0, else NaN, +Inf or -Inf at a column that moves
// across vector lanes, blocks and the last column.
std::vector<float> poisoned_rows(size_t n_x, size_t cols, std::mt19937& rng) {
    std::vector<float> x = testing::random_floats(n_x * cols, rng);
    for (size_t r = 0; r < n_x; ++r)
        if (r % 4 != 0) x[r * cols + (r * 37 + cols - 1) % cols] = kPoisons[r % 4 - 1];
    return x;
}

const WeightFormat kAllFormats[] = {WeightFormat::F32,       WeightFormat::BF16,      WeightFormat::F16,
                                    WeightFormat::MXFP4,     WeightFormat::FP8_E4M3,  WeightFormat::GGUF_Q8_0,
                                    WeightFormat::GGUF_Q4_0, WeightFormat::GGUF_Q4_K, WeightFormat::GGUF_Q5_K,
                                    WeightFormat::GGUF_Q6_K, WeightFormat::GGUF_MXFP4, WeightFormat::BF16_PACKED,
                                    WeightFormat::GGUF_Q4_1, WeightFormat::GGUF_Q5_0, WeightFormat::GGUF_Q5_1,
                                    WeightFormat::GGUF_Q2_K, WeightFormat::GGUF_Q3_K, WeightFormat::GGUF_IQ4_NL,
                                    WeightFormat::GGUF_IQ4_XS, WeightFormat::GGUF_IQ2_XXS, WeightFormat::GGUF_IQ2_XS,
                                    WeightFormat::GGUF_IQ2_S, WeightFormat::GGUF_IQ3_XXS, WeightFormat::GGUF_IQ3_S,
                                    WeightFormat::GGUF_IQ1_S, WeightFormat::GGUF_IQ1_M};

std::string label(WeightFormat f, Layout l, bool int8) {
    return std::string(weight_format_name(f)) + (l == Layout::out_in ? " out_in" : " in_out") +
           (int8 ? " (integer road)" : "");
}

bool has_kernel(const KernelTable& t, WeightFormat f, Layout l) {
    return t.matmul[static_cast<size_t>(f)][static_cast<size_t>(l)] != nullptr;
}

// Matrix x rows with poisoned activations, both roads, through the pooled matmul the forward pass
// calls (so the integer road quantizes x with the plugin's quantizer first). A zero weight meeting
// a NaN or an infinity still makes NaN, so a kernel may skip no weight.
void check_matmul_activations(const KernelTable& isa, const std::string& plugin) {
    const KernelTable& ref = reference_kernels();
    WorkerPool pool(1);
    std::mt19937 rng(47);
    const size_t rows = 37, cols = 512;  // cols: two K-quant super-blocks
    for (WeightFormat f : kAllFormats)
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            if (!has_kernel(ref, f, l)) continue;
            testing::TestMatrix m = testing::random_matrix(f, l, rows, cols, rng);
            for (bool int8 : {false, true}) {
                if (int8 && l != Layout::out_in) continue;
                for (size_t n_x : {1, 3, 4, 7, 9}) {
                    const std::vector<float> x = n_x == 1 ? [&] {
                        std::vector<float> one = testing::random_floats(cols, rng);
                        one[cols / 2 + 3] = kNaN;
                        return one;
                    }() : poisoned_rows(n_x, cols, rng);
                    std::vector<float> y_ref(n_x * rows), y_isa(n_x * rows);
                    matmul(Compute{&ref, &pool, int8}, m.view(), x.data(), n_x, y_ref.data());
                    matmul(Compute{&isa, &pool, int8}, m.view(), x.data(), n_x, y_isa.data());
                    EXPECT_SAME_FINITENESS(y_ref, y_isa,
                                           plugin + ", " + label(f, l, int8) + ", poisoned x, n_x " + std::to_string(n_x));
                }
            }
        }
}

// One weight of row `row` made NaN (`nan`) or infinite: the element itself for the float formats,
// the block's scale for the block formats (whose codes cannot encode either). GGUF's MXFP4 can hold
// neither (its scale byte 255 is 2^127: only overflow makes an infinity, which the edge tests of
// test_isa_kernels.cpp cover).
void poison_weight(testing::TestMatrix& m, size_t row, bool nan) {
    const size_t col = 5;
    const bool out_in = m.layout == Layout::out_in;
    const size_t at = out_in ? row * m.cols + col : col * m.rows + row;
    const uint16_t f16 = nan ? 0x7e00 : 0x7c00;
    switch (m.format) {
        case WeightFormat::F32: {
            const float v = nan ? kNaN : kInf;
            std::memcpy(m.data.data() + 4 * at, &v, 4);
            return;
        }
        case WeightFormat::BF16: {
            const uint16_t v = nan ? 0x7fc0 : 0x7f80;
            std::memcpy(m.data.data() + 2 * at, &v, 2);
            return;
        }
        case WeightFormat::F16: std::memcpy(m.data.data() + 2 * at, &f16, 2); return;
        // E8M0 has no infinity, and a huge scale overflows in some sums and not others (an order
        // may cancel first): NaN either way.
        case WeightFormat::MXFP4: m.scales[row * m.cols / 32] = 0xff; return;
        case WeightFormat::FP8_E4M3:
            if (nan) m.data[row * m.cols + col] = 0x7f;
            else m.block_scales[(row / m.fp8_block_rows) * ((m.cols + m.fp8_block_cols - 1) / m.fp8_block_cols)] = kInf;
            return;
        default: break;
    }
    const WeightBlock b = gguf_weight_block(m.format);
    uint8_t* block = m.data.data() + row * (m.cols / b.values) * b.bytes;
    switch (m.format) {
        case WeightFormat::GGUF_Q8_0:
        case WeightFormat::GGUF_Q4_0:
        case WeightFormat::GGUF_Q4_K:
        case WeightFormat::GGUF_Q5_K:
        case WeightFormat::GGUF_Q4_1:
        case WeightFormat::GGUF_Q5_0:
        case WeightFormat::GGUF_Q5_1:
        case WeightFormat::GGUF_IQ4_NL:
        case WeightFormat::GGUF_IQ4_XS:
        case WeightFormat::GGUF_IQ2_XXS:
        case WeightFormat::GGUF_IQ2_XS:
        case WeightFormat::GGUF_IQ2_S:
        case WeightFormat::GGUF_IQ3_XXS:
        case WeightFormat::GGUF_IQ3_S:
        case WeightFormat::GGUF_IQ1_S: std::memcpy(block, &f16, 2); return;
        case WeightFormat::GGUF_IQ1_M: testing::set_iq1_m_d(block, f16); return;
        case WeightFormat::GGUF_Q6_K: std::memcpy(block + 208, &f16, 2); return;
        case WeightFormat::GGUF_Q2_K: std::memcpy(block + 80, &f16, 2); return;
        case WeightFormat::GGUF_Q3_K: std::memcpy(block + 108, &f16, 2); return;
        default: FAIL() << "no poison for " << weight_format_name(m.format);
    }
}

// A packed BF16 matrix holding NaN or Inf weights (as high bytes its rows' tables or patches hold).
testing::TestMatrix poisoned_packed(size_t rows, size_t cols, bool nan, std::mt19937& rng) {
    testing::TestMatrix bf16 = testing::random_matrix(WeightFormat::BF16, Layout::out_in, rows, cols, rng);
    for (size_t r = 1; r < rows; r += 3) poison_weight(bf16, r, nan);
    testing::TestMatrix m = bf16;
    m.format = WeightFormat::BF16_PACKED;
    const auto p = packed_bf16::pack(bf16.view(), nullptr, 100.0);
    if (!p) throw std::runtime_error("a poisoned BF16 test matrix did not pack");
    m.data.assign(reinterpret_cast<const uint8_t*>(p->storage->data()),
                  reinterpret_cast<const uint8_t*>(p->storage->data()) + p->storage->size());
    return m;
}

// Poisoned weights with finite activations, both roads; and the row decoders on them.
void check_matmul_weights(const KernelTable& isa, const std::string& plugin) {
    const KernelTable& ref = reference_kernels();
    WorkerPool pool(1);
    std::mt19937 rng(53);
    const size_t rows = 37, cols = 512;
    for (WeightFormat f : kAllFormats)
        for (Layout l : {Layout::out_in, Layout::in_out})
            for (bool nan : {true, false}) {
                if (!has_kernel(ref, f, l) || f == WeightFormat::GGUF_MXFP4) continue;
                testing::TestMatrix m;
                if (f == WeightFormat::BF16_PACKED) {
                    m = poisoned_packed(rows, cols, nan, rng);
                } else {
                    m = testing::random_matrix(f, l, rows, cols, rng);
                    for (size_t r = 1; r < rows; r += 3) poison_weight(m, r, nan);
                }
                for (bool int8 : {false, true}) {
                    if (int8 && l != Layout::out_in) continue;
                    for (size_t n_x : {1, 3, 5}) {
                        const std::vector<float> x = testing::random_floats(n_x * cols, rng, 0.25f, 1.0f);
                        std::vector<float> y_ref(n_x * rows), y_isa(n_x * rows);
                        matmul(Compute{&ref, &pool, int8}, m.view(), x.data(), n_x, y_ref.data());
                        matmul(Compute{&isa, &pool, int8}, m.view(), x.data(), n_x, y_isa.data());
                        EXPECT_SAME_FINITENESS(y_ref, y_isa, plugin + ", " + label(f, l, int8) + ", " +
                                                                 (nan ? "NaN" : "infinite") + " weights, n_x " +
                                                                 std::to_string(n_x));
                    }
                }
                const RowToF32Fn decode = isa.row_to_f32[static_cast<size_t>(f)];
                if (l != Layout::out_in || decode == nullptr) continue;
                for (size_t r = 0; r < 4; ++r) {
                    std::vector<float> want(cols), got(cols);
                    ref.row_to_f32[static_cast<size_t>(f)](m.view(), r, want.data());
                    decode(m.view(), r, got.data());
                    EXPECT_SAME_FINITENESS(want, got, plugin + ", row decoder " + label(f, l, false) + " row " + std::to_string(r));
                }
            }
}

// The integer road's quantizer gives a block with a NaN or Inf a NaN scale, and the head bound's
// cheap pass sums int8 rows against a poisoned x.
void check_int8_helpers(const KernelTable& isa, const std::string& plugin) {
    const KernelTable& ref = reference_kernels();
    std::mt19937 rng(59);
    for (size_t block : {kQ8Block, kQ8KBlock}) {
        const size_t n_x = 9, cols = 520;
        const size_t blocks = (cols + block - 1) / block;
        const std::vector<float> x = poisoned_rows(n_x, cols, rng);
        std::vector<int8_t> q_ref(n_x * blocks * block), q_isa(q_ref.size());
        std::vector<float> d_ref(n_x * blocks), d_isa(d_ref.size());
        std::vector<int16_t> sums_ref(n_x * blocks * block / kQ8SumValues), sums_isa(sums_ref.size());
        const bool with_sums = block == kQ8KBlock;
        ref.quantize_q8(x.data(), n_x, cols, cols, block, q_ref.data(), d_ref.data(), with_sums ? sums_ref.data() : nullptr);
        isa.quantize_q8(x.data(), n_x, cols, cols, block, q_isa.data(), d_isa.data(), with_sums ? sums_isa.data() : nullptr);
        EXPECT_SAME_FINITENESS(d_ref, d_isa, plugin + ", quantize_q8 scales, block " + std::to_string(block));
    }
    const size_t rows = 19, cols = 200;
    std::vector<int8_t> q(rows * cols);
    std::uniform_int_distribution<int> byte(-127, 127);
    for (int8_t& v : q) v = static_cast<int8_t>(byte(rng));
    for (float poison : kPoisons)
        for (size_t at : {size_t{0}, size_t{77}, cols - 1}) {
            std::vector<float> x = testing::random_floats(cols, rng);
            x[at] = poison;
            std::vector<float> y_ref(rows), y_isa(rows);
            ref.dot_rows_i8(q.data(), cols, x.data(), y_ref.data(), 0, rows);
            isa.dot_rows_i8(q.data(), cols, x.data(), y_isa.data(), 0, rows);
            EXPECT_SAME_FINITENESS(y_ref, y_isa, plugin + ", dot_rows_i8, " + poison_name(poison) + " at " + std::to_string(at));
        }
}

void check_all(const KernelTable& isa, const std::string& plugin) {
    check_vector_kernels(isa, plugin);
    check_attention_kernels(isa, plugin);
    check_matmul_activations(isa, plugin);
    check_matmul_weights(isa, plugin);
    check_int8_helpers(isa, plugin);
}

// The plugin's table over the reference, with the vnni flavour forced where one is named.
std::unique_ptr<testing::LoadedKernels> installed(const std::string& isa, const char* flavour, KernelTable& table) {
    if (flavour != nullptr) setenv("STORMO_VNNI_FLAVOUR", flavour, 1);
    auto k = testing::load_kernels(isa);
    if (flavour != nullptr) unsetenv("STORMO_VNNI_FLAVOUR");
    table = reference_kernels();
    if (k->plugin() != nullptr) k->plugin()->install(table);
    return k;
}

// The reference against itself: the comparison can fail (a kernel that drops NaN is caught), and
// the reference keeps every poison it is given.
TEST(IsaNonFinite, ComparisonCatchesAKernelThatDropsNaN) {
    KernelTable dropping = reference_kernels();
    dropping.softmax = [](float* x, size_t n) {
        for (size_t i = 0; i < n; ++i)
            if (std::isnan(x[i])) x[i] = 0.0f;
        reference_kernels().softmax(x, n);
    };
    std::vector<float> r{1.0f, kNaN, 2.0f}, s = r;
    reference_kernels().softmax(r.data(), 3);
    dropping.softmax(s.data(), 3);
    EXPECT_FALSE(std::isfinite(r[0]));
    EXPECT_NE(first_finiteness_difference(r, s), -1);
    check_all(reference_kernels(), "reference");
}

TEST(IsaNonFinite, Avx2KeepsEveryNaNAndInf) {
    if (const std::string why = testing::kernels_unusable_reason("avx2"); !why.empty()) GTEST_SKIP() << why;
    KernelTable table;
    const auto k = installed("avx2", nullptr, table);
    ASSERT_NE(k->plugin(), nullptr) << k->create_error.message;
    check_all(table, "avx2");
}

TEST(IsaNonFinite, VnniKeepsEveryNaNAndInfInEachFlavour) {
    if (const std::string why = testing::kernels_unusable_reason("vnni"); !why.empty()) GTEST_SKIP() << why;
    int flavours = 0;
    for (const char* flavour : {"avx_vnni", "avx512_vnni"}) {
        KernelTable table;
        const auto k = installed("vnni", flavour, table);
        if (k->plugin() == nullptr) continue;  // this CPU lacks the flavour (the error says which)
        ++flavours;
        check_all(table, std::string("vnni ") + flavour);
    }
    EXPECT_GE(flavours, 1);
}

}  // namespace
}  // namespace stormo
