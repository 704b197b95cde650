// The ISA kernel plugins, loaded from the build tree with Boost.DLL and installed over a copy of
// the reference table: every kernel they replace is compared with the reference on random and
// edge inputs. Matrix results must lie within kTolerance * sum_i |W[o,i] * x[i]| of the
// reference (plus a subnormal floor), row decoders must match bit for bit, and every replaced
// matrix kernel must keep the row-independence contract (same bits for any n_x, output range or
// thread count). The int8 dot's loop runs here under SIMDe's emulation of VPDPBUSD.
#include <gtest/gtest.h>

#include <simde/x86/avx2.h>
#include <simde/x86/avx512/dpbusd.h>

#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_support.hpp"
#include "stormo/cpu_features.hpp"
#include "stormo/kernels.hpp"
#include "stormo/plugin.hpp"

namespace stormo::simd {
namespace {
// SIMDe's portable VPDPBUSD behind the same Ops interface the plugin's native loop uses.
struct SimdeVnni {
    using V = simde__m256i;
    static V zero() { return simde_mm256_setzero_si256(); }
    static V load(const void* p) { return simde_mm256_loadu_si256(p); }
    static V dpbusd(V acc, V a, V b) { return simde_mm256_dpbusd_epi32(acc, a, b); }
    static V add(V x, V y) { return simde_mm256_add_epi32(x, y); }
    static int32_t sum(V v) {
        int32_t lanes[8];
        simde_mm256_storeu_si256(lanes, v);
        uint32_t s = 0;
        for (int32_t l : lanes) s += static_cast<uint32_t>(l);
        return static_cast<int32_t>(s);
    }
};
}  // namespace
}  // namespace stormo::simd

#include "../../plugins/kernels_vnni/dot_u8i8_blocks.hpp"

namespace stormo {
namespace {

// Accumulation error allowed, relative to sum |w * x| (docs/kernels.md gives the measured worst).
constexpr double kTolerance = 1e-5;

// One loaded kernels plugin; the object dies before the library that holds its code.
struct LoadedKernels {
    boost::dll::shared_library lib;
    const PluginDescription* description = nullptr;
    stormo_plugin_score_fn score = nullptr;
    std::unique_ptr<PluginObject> object;
    Error create_error;

    const KernelsPlugin* plugin() const { return dynamic_cast<const KernelsPlugin*>(object.get()); }
};

std::unique_ptr<LoadedKernels> load_kernels(const std::string& isa) {
    auto k = std::make_unique<LoadedKernels>();
    const std::string path = std::string(STORMO_BUILD_PLUGIN_DIR) + "/libstormo-kernels-" + isa + ".so";
    k->lib.load(path);
    const std::string abi = k->lib.get<const char*()>("stormo_plugin_abi")();
    EXPECT_EQ(abi, kStormoAbi) << path;
    k->description = k->lib.get<const PluginDescription*()>("stormo_plugin_describe")();
    k->score = k->lib.get<int(const ScoreQuery*)>("stormo_plugin_score");
    k->object.reset(k->lib.get<PluginObject*(Error*)>("stormo_plugin_create")(&k->create_error));
    return k;
}

bool cpu_has_all(std::initializer_list<CpuFeature> features) {
    const CpuFeatureSet cpu = detect_cpu_features();
    for (CpuFeature f : features)
        if (!cpu.has(f)) return false;
    return true;
}

MatmulFn entry(const KernelTable& t, WeightFormat f, Layout l) {
    return t.matmul[static_cast<size_t>(f)][static_cast<size_t>(l)];
}

std::string label(WeightFormat f, Layout l) {
    return std::string(weight_format_name(f)) + (l == Layout::out_in ? " out_in" : " in_out");
}

// The worst error seen per kernel, as a fraction of sum |w * x|, over a whole test.
struct Worst {
    std::map<std::string, std::pair<double, std::string>> by_kernel;  // kernel -> (ratio, case)
    void note(const std::string& kernel, double r, const std::string& where) {
        auto& slot = by_kernel[kernel];
        if (r >= slot.first) slot = {r, where};
    }
};

// Compares y_isa with y_ref element by element. Non-finite reference values must be matched by
// the same class (NaN, or the same infinity); finite ones within the tolerance.
void expect_close(const std::vector<float>& y_ref, const std::vector<float>& y_isa,
                  const std::vector<double>& scale, size_t n_terms, const std::string& kernel,
                  const std::string& what, Worst& worst) {
    // Products that land among the subnormals round to absolute steps of 2^-150 in the reference.
    const double subnormal_floor = static_cast<double>(n_terms) * std::ldexp(1.0, -149);
    size_t failures = 0;
    for (size_t k = 0; k < y_ref.size() && failures < 5; ++k) {
        const float r = y_ref[k];
        const float s = y_isa[k];
        if (std::isnan(r) || std::isinf(r)) {
            const bool same_class = std::isnan(r) ? std::isnan(s) : s == r;
            if (!same_class) {
                ADD_FAILURE() << what << " [" << k << "]: reference " << r << ", plugin " << s;
                ++failures;
            }
            continue;
        }
        const double diff = std::fabs(static_cast<double>(s) - r);
        if (!(diff <= kTolerance * scale[k] + subnormal_floor)) {
            ADD_FAILURE() << what << " [" << k << "]: reference " << r << ", plugin " << s << ", sum|wx| " << scale[k];
            ++failures;
        }
        if (scale[k] > 0) worst.note(kernel, diff > subnormal_floor ? diff / scale[k] : 0.0, what);
    }
}

// One (format, layout) kernel against the reference on one matrix and input, plus the
// row-independence contract: single rows and a split output range give the full call's bits.
void check_matmul(MatmulFn isa, MatmulFn ref, const testing::TestMatrix& m, const std::vector<float>& x,
                  size_t n_x, const std::string& what, Worst& worst, std::mt19937& rng) {
    const std::string kernel = label(m.format, m.layout);
    const size_t rows = m.rows;
    const size_t cols = m.cols;
    std::vector<float> y_ref(n_x * rows), y_isa(n_x * rows, -1.0f);
    ref(m.view(), x.data(), n_x, cols, y_ref.data(), rows, 0, rows);
    isa(m.view(), x.data(), n_x, cols, y_isa.data(), rows, 0, rows);
    const std::vector<float> w = testing::dense_weights(m);
    expect_close(y_ref, y_isa, testing::abs_product_sums(w, rows, cols, x.data(), n_x), cols, kernel, what,
                 worst);

    std::uniform_int_distribution<size_t> pick(0, rows);
    const size_t split = pick(rng);
    for (size_t r = 0; r < n_x; ++r) {
        std::vector<float> one(rows, -1.0f);
        isa(m.view(), x.data() + r * cols, 1, cols, one.data(), rows, 0, split);
        isa(m.view(), x.data() + r * cols, 1, cols, one.data(), rows, split, rows);
        for (size_t o = 0; o < rows; ++o)
            if (!testing::same_bits_or_both_nan(one[o], y_isa[r * rows + o])) {
                ADD_FAILURE() << what << ": row " << r << " output " << o << " alone gives " << one[o]
                              << ", in the batch " << y_isa[r * rows + o] << " (split " << split << ")";
                return;
            }
    }
}

// Every replaced matrix kernel on odd shapes and tails, random inputs.
void check_all_matmuls(const KernelTable& table, const char* provider, Worst& worst) {
    std::mt19937 rng(2024);
    const KernelTable& ref = reference_kernels();
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16, WeightFormat::MXFP4}) {
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            const MatmulFn isa = entry(table, f, l);
            if (isa == nullptr || isa == entry(ref, f, l)) continue;
            EXPECT_STREQ(table.matmul_provider[static_cast<size_t>(f)][static_cast<size_t>(l)], provider);
            const std::vector<size_t> cols_list = f == WeightFormat::MXFP4
                                                      ? std::vector<size_t>{32, 64, 96, 320}
                                                      : std::vector<size_t>{1, 3, 8, 13, 16, 24, 31, 33, 100, 257};
            for (size_t rows : {1, 5, 8, 17, 40, 67})
                for (size_t cols : cols_list)
                    for (size_t n_x : {1, 2, 3, 4, 5, 9}) {
                        const testing::TestMatrix m = testing::random_matrix(f, l, rows, cols, rng);
                        const std::vector<float> x = testing::random_floats(n_x * cols, rng);
                        check_matmul(isa, entry(ref, f, l), m, x, n_x,
                                     label(f, l) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                                         " n_x " + std::to_string(n_x),
                                     worst, rng);
                    }
        }
    }
}

// MXFP4 edges: one row per scale byte 0..255 (subnormal, huge, overflowing to infinity, NaN) and
// an all-zero row, every code present in every block, inputs with exact zeros.
void check_mxfp4_edges(const KernelTable& table, Worst& worst) {
    const MatmulFn isa = entry(table, WeightFormat::MXFP4, Layout::out_in);
    if (isa == entry(reference_kernels(), WeightFormat::MXFP4, Layout::out_in)) return;
    std::mt19937 rng(99);
    testing::TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.rows = 257;
    m.cols = 64;
    m.data.resize(m.rows * 32);
    m.scales.resize(m.rows * 2);
    for (size_t o = 0; o < 256; ++o) {
        for (size_t j = 0; j < 32; ++j)
            m.data[o * 32 + j] = static_cast<uint8_t>((j % 16) | (((j * 7 + o) % 16) << 4));
        m.scales[o * 2] = m.scales[o * 2 + 1] = static_cast<uint8_t>(o);
    }
    m.scales[512] = m.scales[513] = 127;  // row 256: all-zero nibbles
    for (size_t n_x : {1, 2, 5}) {
        // Small inputs keep every finite weight's products and sums finite, so non-finite
        // results come only from infinite or NaN weights (order cannot change them).
        std::vector<float> x = testing::random_floats(n_x * m.cols, rng, -1.0f / 1024, 1.0f / 1024);
        x[3] = 0.0f;
        x[m.cols - 1] = 0.0f;
        check_matmul(isa, entry(reference_kernels(), WeightFormat::MXFP4, Layout::out_in), m, x, n_x,
                     "MXFP4 edge scales n_x " + std::to_string(n_x), worst, rng);
    }
}

// Dense edges: every finite BF16 exponent from subnormal up to 2^60, every finite F16 value
// (subnormals, 65504), and inputs with zeros.
void check_dense_edges(const KernelTable& table, Worst& worst) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<uint32_t> bits(0, 0xFFFF);
    for (WeightFormat f : {WeightFormat::BF16, WeightFormat::F16}) {
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            const MatmulFn isa = entry(table, f, l);
            if (isa == entry(reference_kernels(), f, l)) continue;
            testing::TestMatrix m = testing::random_matrix(f, l, 23, 41, rng);
            for (size_t k = 0; k < m.rows * m.cols; ++k) {
                uint16_t v = static_cast<uint16_t>(bits(rng));
                if (f == WeightFormat::BF16) {
                    const uint16_t exponent = static_cast<uint16_t>((v >> 7) & 0xFF);
                    if (exponent > 127 + 60) v = static_cast<uint16_t>(v & ~(0xFF << 7));  // keep finite, no overflow
                } else if (((v >> 10) & 0x1F) == 0x1F) {
                    v = static_cast<uint16_t>(v & ~(1u << 14));  // no inf / NaN
                }
                std::memcpy(m.data.data() + 2 * k, &v, 2);
            }
            for (size_t n_x : {1, 4, 7}) {
                std::vector<float> x = testing::random_floats(n_x * m.cols, rng);
                x[0] = 0.0f;
                check_matmul(isa, entry(reference_kernels(), f, l), m, x, n_x, label(f, l) + " edge values", worst, rng);
            }
        }
    }
}

// Row decoders: bit for bit (NaN payloads aside) for every BF16 and F16 pattern and every
// MXFP4 code under every scale byte.
void check_rows(const KernelTable& table) {
    const KernelTable& ref = reference_kernels();
    for (WeightFormat f : {WeightFormat::BF16, WeightFormat::F16}) {
        const RowToF32Fn isa = table.row_to_f32[static_cast<size_t>(f)];
        if (isa == ref.row_to_f32[static_cast<size_t>(f)]) continue;
        testing::TestMatrix m;
        m.format = f;
        m.rows = 256;
        m.cols = 259;  // odd: a scalar tail in every row; covers all 65536 patterns and more
        m.data.resize(m.rows * m.cols * 2);
        for (size_t k = 0; k < m.rows * m.cols; ++k) {
            const uint16_t v = static_cast<uint16_t>(k);
            std::memcpy(m.data.data() + 2 * k, &v, 2);
        }
        std::vector<float> a(m.cols), b(m.cols);
        for (size_t r = 0; r < m.rows; ++r) {
            ref.row_to_f32[static_cast<size_t>(f)](m.view(), r, a.data());
            isa(m.view(), r, b.data());
            for (size_t i = 0; i < m.cols; ++i)
                ASSERT_TRUE(testing::same_bits_or_both_nan(a[i], b[i]))
                    << weight_format_name(f) << " pattern " << r * m.cols + i << ": " << a[i] << " vs " << b[i];
        }
    }
    const RowToF32Fn isa = table.row_to_f32[static_cast<size_t>(WeightFormat::MXFP4)];
    if (isa == ref.row_to_f32[static_cast<size_t>(WeightFormat::MXFP4)]) return;
    testing::TestMatrix m;
    m.format = WeightFormat::MXFP4;
    m.rows = 256;
    m.cols = 96;
    m.data.resize(m.rows * 48);
    m.scales.resize(m.rows * 3);
    for (size_t o = 0; o < 256; ++o) {
        for (size_t j = 0; j < 48; ++j) m.data[o * 48 + j] = static_cast<uint8_t>((j % 16) | ((15 - (j + o) % 16) << 4));
        m.scales[o * 3] = static_cast<uint8_t>(o);
        m.scales[o * 3 + 1] = static_cast<uint8_t>(255 - o);
        m.scales[o * 3 + 2] = 127;
    }
    std::vector<float> a(m.cols), b(m.cols);
    for (size_t r = 0; r < m.rows; ++r) {
        ref.row_to_f32[static_cast<size_t>(WeightFormat::MXFP4)](m.view(), r, a.data());
        isa(m.view(), r, b.data());
        for (size_t i = 0; i < m.cols; ++i)
            ASSERT_TRUE(testing::same_bits_or_both_nan(a[i], b[i]))
                << "MXFP4 row " << r << " element " << i << ": " << a[i] << " vs " << b[i];
    }
}

void check_vector_ops(const KernelTable& table, Worst& worst) {
    const KernelTable& ref = reference_kernels();
    std::mt19937 rng(17);
    std::vector<size_t> sizes;
    for (size_t n = 0; n <= 40; ++n) sizes.push_back(n);
    for (size_t n : {63, 64, 65, 100, 1000, 2880}) sizes.push_back(n);
    for (size_t n : sizes) {
        const std::vector<float> a = testing::random_floats(n, rng, -3.0f, 3.0f);
        const std::vector<float> b = testing::random_floats(n, rng, -3.0f, 3.0f);
        if (table.dot != ref.dot) {
            double scale = 0;
            for (size_t i = 0; i < n; ++i) scale += std::fabs(static_cast<double>(a[i]) * b[i]);
            expect_close({ref.dot(a.data(), b.data(), n)}, {table.dot(a.data(), b.data(), n)}, {scale}, n, "dot",
                         "dot n " + std::to_string(n), worst);
        }
        if (table.rmsnorm != ref.rmsnorm && n > 0) {
            std::vector<float> r(n), s(n);
            ref.rmsnorm(a.data(), b.data(), n, 1e-5f, r.data());
            table.rmsnorm(a.data(), b.data(), n, 1e-5f, s.data());
            std::vector<double> scale(n);
            for (size_t i = 0; i < n; ++i) scale[i] = std::fabs(static_cast<double>(r[i]));
            expect_close(r, s, scale, 1, "rmsnorm", "rmsnorm n " + std::to_string(n), worst);
        }
        if (table.axpy != ref.axpy) {
            std::vector<float> r = b, s = b;
            ref.axpy(0.37f, a.data(), r.data(), n);
            table.axpy(0.37f, a.data(), s.data(), n);
            std::vector<double> scale(n);
            for (size_t i = 0; i < n; ++i) scale[i] = std::fabs(0.37 * a[i]) + std::fabs(static_cast<double>(b[i]));
            expect_close(r, s, scale, 1, "axpy", "axpy n " + std::to_string(n), worst);
        }
    }
    // The masked tail must not write past n.
    if (table.axpy != ref.axpy) {
        std::vector<float> x(16, 1.0f), y(16, 5.0f);
        table.axpy(2.0f, x.data(), y.data(), 11);
        EXPECT_EQ(y[10], 7.0f);
        EXPECT_EQ(y[11], 5.0f);
        EXPECT_EQ(y[15], 5.0f);
    }
}

// The pooled matmul over 1, 2 and 3 threads gives the same bits with the plugin's kernels too.
void check_thread_counts(const KernelTable& table) {
    std::mt19937 rng(8);
    ThreadPool p1(1), p2(2), p3(3);
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16, WeightFormat::MXFP4}) {
        for (Layout l : {Layout::out_in, Layout::in_out}) {
            if (entry(table, f, l) == nullptr) continue;
            const testing::TestMatrix m = testing::random_matrix(f, l, 1031, 160, rng);
            for (size_t n_x : {size_t{1}, size_t{3}}) {
                const std::vector<float> x = testing::random_floats(n_x * 160, rng);
                std::vector<float> y1(n_x * 1031), y2(n_x * 1031), y3(n_x * 1031);
                matmul(Compute{&table, &p1}, m.view(), x.data(), n_x, y1.data());
                matmul(Compute{&table, &p2}, m.view(), x.data(), n_x, y2.data());
                matmul(Compute{&table, &p3}, m.view(), x.data(), n_x, y3.data());
                EXPECT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0) << label(f, l);
                EXPECT_EQ(std::memcmp(y1.data(), y3.data(), y1.size() * 4), 0) << label(f, l);
            }
        }
    }
}

void report(const Worst& worst, const char* plugin) {
    double overall = 0;
    for (const auto& [kernel, entry] : worst.by_kernel) {
        std::cout << "[ measured ] " << plugin << " " << kernel << ": worst |plugin - reference| / sum|w*x| = "
                  << entry.first << " (" << entry.second << ")\n";
        overall = std::max(overall, entry.first);
    }
    std::cout << "[ measured ] " << plugin << " overall worst " << overall << ", tolerance " << kTolerance << "\n";
    EXPECT_GE(worst.by_kernel.size(), 10u) << "fewer kernels compared than the plugin replaces";
    ::testing::Test::RecordProperty("worst_relative_error", std::to_string(overall));
}

TEST(IsaKernelsAvx2, DescribesItselfAndScoresByCpu) {
    const auto k = load_kernels("avx2");
    ASSERT_NE(k->description, nullptr);
    EXPECT_STREQ(k->description->name, "avx2");
    EXPECT_EQ(k->description->kind, PluginKind::kernels);
    EXPECT_STREQ(k->description->version, "0.1.0");
    EXPECT_STREQ(k->description->cpu_features, "avx2,fma,f16c");
    ScoreQuery q;
    EXPECT_EQ(k->score(&q), 0) << "no features: unusable";
    EXPECT_EQ(k->score(nullptr), 0);
    q.cpu = detect_cpu_features();
    EXPECT_EQ(k->score(&q) > 0, cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c}));
}

TEST(IsaKernelsAvx2, EveryReplacedKernelMatchesTheReference) {
    if (!cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c}))
        GTEST_SKIP() << "this CPU lacks avx2/fma/f16c: the avx2 kernels cannot run here";
    const auto k = load_kernels("avx2");
    ASSERT_NE(k->plugin(), nullptr) << k->create_error.message;
    KernelTable table = reference_kernels();
    k->plugin()->install(table);
    // What the plugin promises to replace.
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::F16, WeightFormat::MXFP4})
        EXPECT_NE(entry(table, f, Layout::out_in), entry(reference_kernels(), f, Layout::out_in)) << weight_format_name(f);
    EXPECT_EQ(entry(table, WeightFormat::MXFP4, Layout::in_out), nullptr);
    EXPECT_NE(table.dot, reference_kernels().dot);
    EXPECT_EQ(table.softmax, reference_kernels().softmax);

    Worst worst;
    check_all_matmuls(table, "avx2", worst);
    check_mxfp4_edges(table, worst);
    check_dense_edges(table, worst);
    check_rows(table);
    check_vector_ops(table, worst);
    check_thread_counts(table);
    report(worst, "avx2");
}

TEST(IsaKernelsVnni, DescribesItselfAndScoresAboveAvx2WhenUsable) {
    const auto k = load_kernels("vnni");
    const auto avx2 = load_kernels("avx2");
    ASSERT_NE(k->description, nullptr);
    EXPECT_STREQ(k->description->name, "vnni");
    EXPECT_EQ(k->description->kind, PluginKind::kernels);
    EXPECT_STREQ(k->description->cpu_features, "avx2,fma,f16c,avx_vnni");
    ScoreQuery q;
    for (CpuFeature f : {CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c, CpuFeature::avx_vnni}) q.cpu.add(f);
    EXPECT_GT(k->score(&q), avx2->score(&q));
    q.cpu = detect_cpu_features();
    const bool usable = cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c, CpuFeature::avx_vnni});
    EXPECT_EQ(k->score(&q) > 0, usable);
    if (!usable) {
        // Even forced, it refuses to build kernels this CPU cannot run, and says why.
        EXPECT_EQ(k->object, nullptr);
        EXPECT_EQ(k->create_error.kind, ErrorKind::unsupported);
        EXPECT_NE(k->create_error.message.find("avx_vnni"), std::string::npos) << k->create_error.message;
    }
}

TEST(IsaKernelsVnni, FloatKernelsMatchTheReference) {
    if (!cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c, CpuFeature::avx_vnni}))
        GTEST_SKIP() << "this CPU lacks avx_vnni: the vnni plugin's kernels cannot run here";
    const auto k = load_kernels("vnni");
    ASSERT_NE(k->plugin(), nullptr) << k->create_error.message;
    KernelTable table = reference_kernels();
    k->plugin()->install(table);
    Worst worst;
    check_all_matmuls(table, "vnni", worst);
    check_mxfp4_edges(table, worst);
    check_dense_edges(table, worst);
    check_rows(table);
    check_vector_ops(table, worst);
    check_thread_counts(table);
    report(worst, "vnni");
}

// Inputs for the int8 dot: sizes around every block and tail boundary, random bytes, the
// extremes, and a length whose sum wraps.
std::vector<std::pair<std::vector<uint8_t>, std::vector<int8_t>>> int8_cases() {
    std::mt19937 rng(31);
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<std::pair<std::vector<uint8_t>, std::vector<int8_t>>> cases;
    for (size_t n : {0, 1, 3, 4, 5, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128, 129, 1000, 4113}) {
        std::vector<uint8_t> a(n);
        std::vector<int8_t> b(n);
        for (size_t i = 0; i < n; ++i) {
            a[i] = static_cast<uint8_t>(byte(rng));
            b[i] = static_cast<int8_t>(byte(rng) - 128);
        }
        cases.emplace_back(a, b);
    }
    cases.emplace_back(std::vector<uint8_t>(777, 255), std::vector<int8_t>(777, -128));
    cases.emplace_back(std::vector<uint8_t>(777, 255), std::vector<int8_t>(777, 127));
    cases.emplace_back(std::vector<uint8_t>(70001, 255), std::vector<int8_t>(70001, -128));  // wraps
    return cases;
}

TEST(IsaKernelsVnni, Int8DotLoopUnderSimdeIsBitExact) {
    const DotI8Fn ref = reference_kernels().dot_u8i8;
    for (const auto& [a, b] : int8_cases())
        EXPECT_EQ(simd::dot_u8i8_blocks<simd::SimdeVnni>(a.data(), b.data(), a.size()), ref(a.data(), b.data(), a.size()))
            << "n " << a.size();
}

TEST(IsaKernelsVnni, Int8DotNativeIsBitExact) {
    if (!cpu_has_all({CpuFeature::avx2, CpuFeature::avx_vnni}))
        GTEST_SKIP() << "this CPU lacks avx_vnni: VPDPBUSD (VEX) cannot run here; the SIMDe test covers the loop";
    const auto k = load_kernels("vnni");
    ASSERT_NE(k->plugin(), nullptr) << k->create_error.message;
    KernelTable table = reference_kernels();
    k->plugin()->install(table);
    ASSERT_NE(table.dot_u8i8, reference_kernels().dot_u8i8);
    for (const auto& [a, b] : int8_cases())
        EXPECT_EQ(table.dot_u8i8(a.data(), b.data(), a.size()), reference_kernels().dot_u8i8(a.data(), b.data(), a.size()))
            << "n " << a.size();
}

}  // namespace
}  // namespace stormo
