#pragma once
// Helpers for the kernel tests: random weight matrices in every format and layout, random
// inputs, and comparisons that treat NaN as equal to NaN and measure error against sum |w*x|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "stormo/cpu_features.hpp"
#include "stormo/kernels.hpp"
#include "stormo/packed_bf16.hpp"

namespace stormo::testing {

inline bool cpu_has_all(std::initializer_list<CpuFeature> features) {
    const CpuFeatureSet cpu = detect_cpu_features();
    for (CpuFeature f : features)
        if (!cpu.has(f)) return false;
    return true;
}

// Why the kernels named `kernels` ("reference", "avx2", "vnni") cannot run on this CPU, or empty
// when they can: the test's own reading of CPUID, independent of the plugins' checks.
inline std::string kernels_unusable_reason(const std::string& kernels) {
    const bool avx2 = cpu_has_all({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c});
    if (kernels == "avx2" && !avx2) return "this CPU lacks avx2/fma/f16c";
    if (kernels == "vnni") {
        const bool avx_vnni = avx2 && cpu_has_all({CpuFeature::avx_vnni});
        const bool avx512_vnni = avx2 && cpu_has_all({CpuFeature::avx512f, CpuFeature::avx512bw,
                                                      CpuFeature::avx512vl, CpuFeature::avx512_vnni});
        if (!avx_vnni && !avx512_vnni) return "this CPU has neither avx_vnni nor avx512_vnni+avx512vl+avx512bw";
    }
    return {};
}

// A matrix and the bytes behind its view. in_out matrices are stored [cols][rows].
struct TestMatrix {
    WeightFormat format = WeightFormat::F32;
    Layout layout = Layout::out_in;
    size_t rows = 0;
    size_t cols = 0;
    std::vector<uint8_t> data;
    std::vector<uint8_t> scales;  // MXFP4 only
    std::vector<float> block_scales;  // FP8_E4M3 only: [ceil(rows / fp8_block_rows), ceil(cols / fp8_block_cols)]
    static constexpr size_t kFp8BlockRows = 16, kFp8BlockCols = 24;  // partial edge blocks on odd shapes
    size_t fp8_block_rows = kFp8BlockRows, fp8_block_cols = kFp8BlockCols;

    WeightView view() const {
        WeightView v;
        v.format = format;
        v.layout = layout;
        v.data = data.data();
        v.scales = scales.empty() ? nullptr : scales.data();
        v.rows = rows;
        v.cols = cols;
        if (format == WeightFormat::FP8_E4M3) {
            v.block_scales = block_scales.data();
            v.block_rows = fp8_block_rows;
            v.block_cols = fp8_block_cols;
        }
        if (format == WeightFormat::BF16_PACKED) {
            // The storage packed_bf16::pack lays out: the rows, then the patch offsets and patches.
            v.patch_begin = reinterpret_cast<const uint32_t*>(data.data() + rows * packed_bf16::row_bytes(cols));
            v.patches = v.patch_begin + rows + 1;
        }
        return v;
    }
};

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& f : v) f = dist(rng);
    return v;
}

// Every GGUF block format, and those of them the integer road has kernels for (the others stay on
// floats).
inline constexpr WeightFormat kGgufFormats[] = {
    WeightFormat::GGUF_Q8_0, WeightFormat::GGUF_Q4_0, WeightFormat::GGUF_Q4_1, WeightFormat::GGUF_Q5_0,
    WeightFormat::GGUF_Q5_1, WeightFormat::GGUF_Q2_K, WeightFormat::GGUF_Q3_K, WeightFormat::GGUF_Q4_K,
    WeightFormat::GGUF_Q5_K, WeightFormat::GGUF_Q6_K, WeightFormat::GGUF_IQ4_NL, WeightFormat::GGUF_IQ4_XS,
    WeightFormat::GGUF_IQ2_XXS, WeightFormat::GGUF_IQ2_XS, WeightFormat::GGUF_IQ2_S, WeightFormat::GGUF_IQ3_XXS,
    WeightFormat::GGUF_IQ3_S, WeightFormat::GGUF_IQ1_S, WeightFormat::GGUF_IQ1_M, WeightFormat::GGUF_MXFP4};
inline constexpr WeightFormat kGgufInt8Formats[] = {WeightFormat::GGUF_Q8_0, WeightFormat::GGUF_Q4_0,
                                                    WeightFormat::GGUF_Q4_K, WeightFormat::GGUF_Q5_K,
                                                    WeightFormat::GGUF_Q6_K, WeightFormat::GGUF_MXFP4};

// IQ1_M's f16 d: its four nibbles are the top nibbles of the block's four scale words (bytes 48-55).
inline void set_iq1_m_d(uint8_t* blk, uint16_t bits) {
    for (unsigned i = 0; i < 4; ++i)
        blk[48 + 2 * i + 1] = static_cast<uint8_t>((blk[48 + 2 * i + 1] & 0x0F) | ((bits >> (4 * i)) & 0x0F) << 4);
}

// GGUF blocks (cols a whole number of blocks): random bytes, with every f16 scale a normal value
// in [2^-8, 2^-1) (random sign for Q8_0, Q4_0 and Q6_K's d) and MXFP4 exponents 118..130.
inline void fill_gguf_blocks(TestMatrix& m, std::mt19937& rng) {
    const WeightBlock b = gguf_weight_block(m.format);
    const size_t n_blocks = m.rows * m.cols / b.values;
    m.data.resize(n_blocks * b.bytes);
    std::uniform_int_distribution<uint32_t> bits(0, 0xFFFFFFFFu);
    for (uint8_t& v : m.data) v = static_cast<uint8_t>(bits(rng));
    auto f16 = [&](uint8_t* p, bool sign) {
        const uint32_t r = bits(rng);
        const uint16_t v = static_cast<uint16_t>(((sign ? r & 1u : 0u) << 15) | ((7u + (r >> 1) % 7u) << 10) | ((r >> 8) & 0x3FFu));
        std::memcpy(p, &v, 2);
    };
    for (size_t k = 0; k < n_blocks; ++k) {
        uint8_t* blk = m.data.data() + k * b.bytes;
        switch (m.format) {
            case WeightFormat::GGUF_Q8_0:
            case WeightFormat::GGUF_Q4_0:
            case WeightFormat::GGUF_Q5_0:
            case WeightFormat::GGUF_IQ4_NL:
            case WeightFormat::GGUF_IQ4_XS:
            case WeightFormat::GGUF_IQ2_XXS:
            case WeightFormat::GGUF_IQ2_XS:
            case WeightFormat::GGUF_IQ2_S:
            case WeightFormat::GGUF_IQ3_XXS:
            case WeightFormat::GGUF_IQ3_S:
            case WeightFormat::GGUF_IQ1_S: f16(blk, true); break;
            case WeightFormat::GGUF_IQ1_M: {
                uint8_t d[2];
                f16(d, true);
                set_iq1_m_d(blk, static_cast<uint16_t>(d[0] | d[1] << 8));
                break;
            }
            case WeightFormat::GGUF_Q4_1:
            case WeightFormat::GGUF_Q5_1: f16(blk, true), f16(blk + 2, true); break;
            case WeightFormat::GGUF_Q4_K:
            case WeightFormat::GGUF_Q5_K: f16(blk, false), f16(blk + 2, false); break;
            case WeightFormat::GGUF_Q6_K: f16(blk + 208, true); break;
            case WeightFormat::GGUF_Q2_K: f16(blk + 80, false), f16(blk + 82, false); break;
            case WeightFormat::GGUF_Q3_K: f16(blk + 108, true); break;
            case WeightFormat::GGUF_MXFP4: blk[0] = static_cast<uint8_t>(118 + bits(rng) % 13); break;
            default: break;
        }
    }
}

// The blocks of tests/data/gguf/quants/<NAME>.ref (gguf-py's quantizations and edge blocks, with
// the values gguf-py decodes them to) as a matrix of two blocks per row, and those values.
struct GgufRefMatrix {
    TestMatrix m;
    std::vector<uint32_t> value_bits;  // row-major, as gguf-py decoded them
};

inline GgufRefMatrix gguf_ref_matrix(WeightFormat f, const std::string& name) {
    GgufRefMatrix r;
    const std::string path = std::string(STORMO_TEST_DATA_DIR) + "/gguf/quants/" + name + ".ref";
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << "cannot open " << path;
    const std::string bytes{std::istreambuf_iterator<char>(in), {}};
    const WeightBlock b = gguf_weight_block(f);
    const size_t n_blocks = bytes.size() / (b.bytes + 4 * b.values) / 2 * 2;
    r.m.format = f;
    r.m.rows = n_blocks / 2;
    r.m.cols = 2 * b.values;
    r.m.data.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n_blocks * b.bytes));
    const size_t all_blocks = bytes.size() / (b.bytes + 4 * b.values);
    r.value_bits.resize(n_blocks * b.values);
    std::memcpy(r.value_bits.data(), bytes.data() + all_blocks * b.bytes, r.value_bits.size() * 4);
    return r;
}

// Finite values of moderate magnitude (about 2^-6 to 2^5) in every format; MXFP4 gets random
// nibbles and scales in [scale_lo, scale_hi].
inline TestMatrix random_matrix(WeightFormat format, Layout layout, size_t rows, size_t cols,
                                std::mt19937& rng, uint8_t scale_lo = 118, uint8_t scale_hi = 130) {
    TestMatrix m;
    m.format = format;
    m.layout = layout;
    m.rows = rows;
    m.cols = cols;
    const size_t n = rows * cols;
    std::uniform_int_distribution<uint32_t> bits(0, 0xFFFFFFFFu);
    switch (format) {
        case WeightFormat::F32: {
            const std::vector<float> v = random_floats(n, rng, -2.0f, 2.0f);
            m.data.resize(n * 4);
            std::memcpy(m.data.data(), v.data(), n * 4);
            break;
        }
        case WeightFormat::BF16: {
            m.data.resize(n * 2);
            for (size_t k = 0; k < n; ++k) {
                // sign, exponent 121..132, 7 random mantissa bits
                const uint32_t r = bits(rng);
                const uint16_t v = static_cast<uint16_t>(((r & 1u) << 15) | ((121u + (r >> 1) % 12u) << 7) | ((r >> 16) & 0x7Fu));
                std::memcpy(m.data.data() + 2 * k, &v, 2);
            }
            break;
        }
        case WeightFormat::F16: {
            m.data.resize(n * 2);
            for (size_t k = 0; k < n; ++k) {
                // sign, exponent 9..20, 10 random mantissa bits
                const uint32_t r = bits(rng);
                const uint16_t v = static_cast<uint16_t>(((r & 1u) << 15) | ((9u + (r >> 1) % 12u) << 10) | ((r >> 16) & 0x3FFu));
                std::memcpy(m.data.data() + 2 * k, &v, 2);
            }
            break;
        }
        case WeightFormat::MXFP4: {
            m.data.resize(n / 2);
            for (uint8_t& b : m.data) b = static_cast<uint8_t>(bits(rng));
            m.scales.resize(n / 32);
            std::uniform_int_distribution<int> s(scale_lo, scale_hi);
            for (uint8_t& b : m.scales) b = static_cast<uint8_t>(s(rng));
            break;
        }
        case WeightFormat::FP8_E4M3: {
            m.data.resize(n);
            for (uint8_t& b : m.data) {
                b = static_cast<uint8_t>(bits(rng));
                if ((b & 0x7Fu) == 0x7Fu) b = static_cast<uint8_t>(b - 1);  // 0x7F and 0xFF are NaN
            }
            const size_t grid = ((rows + TestMatrix::kFp8BlockRows - 1) / TestMatrix::kFp8BlockRows) *
                                ((cols + TestMatrix::kFp8BlockCols - 1) / TestMatrix::kFp8BlockCols);
            m.block_scales = random_floats(grid, rng, 1e-3f, 0.05f);
            break;
        }
        case WeightFormat::GGUF_Q8_0:
        case WeightFormat::GGUF_Q4_0:
        case WeightFormat::GGUF_Q4_K:
        case WeightFormat::GGUF_Q5_K:
        case WeightFormat::GGUF_Q6_K:
        case WeightFormat::GGUF_MXFP4:
        case WeightFormat::GGUF_Q4_1:
        case WeightFormat::GGUF_Q5_0:
        case WeightFormat::GGUF_Q5_1:
        case WeightFormat::GGUF_Q2_K:
        case WeightFormat::GGUF_Q3_K:
        case WeightFormat::GGUF_IQ4_NL:
        case WeightFormat::GGUF_IQ4_XS:
        case WeightFormat::GGUF_IQ2_XXS:
        case WeightFormat::GGUF_IQ2_XS:
        case WeightFormat::GGUF_IQ2_S:
        case WeightFormat::GGUF_IQ3_XXS:
        case WeightFormat::GGUF_IQ3_S:
        case WeightFormat::GGUF_IQ1_S:
        case WeightFormat::GGUF_IQ1_M: fill_gguf_blocks(m, rng); break;
        case WeightFormat::BF16_PACKED: {
            // A BF16 matrix as above, packed (its 14 high bytes need no patch).
            const TestMatrix bf16 = random_matrix(WeightFormat::BF16, Layout::out_in, rows, cols, rng);
            const std::optional<packed_bf16::Packed> p = packed_bf16::pack(bf16.view(), nullptr, 100.0);
            if (!p) throw std::runtime_error("random_matrix: a BF16 test matrix did not pack");
            m.data.assign(reinterpret_cast<const uint8_t*>(p->storage->data()),
                          reinterpret_cast<const uint8_t*>(p->storage->data()) + p->storage->size());
            break;
        }
        case WeightFormat::count: break;
    }
    return m;
}

// W[o, i] decoded through the reference row decoder (out_in) or read back from in_out storage.
inline std::vector<float> dense_weights(const TestMatrix& m) {
    std::vector<float> w(m.rows * m.cols);
    const KernelTable& ref = reference_kernels();
    if (m.layout == Layout::out_in) {
        for (size_t o = 0; o < m.rows; ++o)
            ref.row_to_f32[static_cast<size_t>(m.format)](m.view(), o, w.data() + o * m.cols);
        return w;
    }
    // in_out: decode the [cols][rows] storage as an out_in matrix of cols rows, then transpose.
    TestMatrix t = m;
    t.layout = Layout::out_in;
    t.rows = m.cols;
    t.cols = m.rows;
    std::vector<float> row(m.rows);
    for (size_t i = 0; i < m.cols; ++i) {
        ref.row_to_f32[static_cast<size_t>(m.format)](t.view(), i, row.data());
        for (size_t o = 0; o < m.rows; ++o) w[o * m.cols + i] = row[o];
    }
    return w;
}

// sum_i |W[o, i] * x[r, i]| in double: the scale an accumulation error is measured against.
inline std::vector<double> abs_product_sums(const std::vector<float>& w, size_t rows, size_t cols,
                                            const float* x, size_t n_x) {
    std::vector<double> s(n_x * rows);
    for (size_t r = 0; r < n_x; ++r)
        for (size_t o = 0; o < rows; ++o) {
            double acc = 0;
            for (size_t i = 0; i < cols; ++i)
                acc += std::fabs(static_cast<double>(w[o * cols + i]) * x[r * cols + i]);
            s[r * rows + o] = acc;
        }
    return s;
}

// Quantized activation rows for the integer road's kernels: every int8 value (-128 included) and
// positive block scales spread over [2^-12, 2^4] unless the caller overwrites them.
struct TestQ8 {
    size_t n_x = 0;
    size_t cols = 0;
    size_t blocks = 0;
    std::vector<int8_t> q;
    std::vector<float> scales;

    Q8Rows view() const { return Q8Rows{q.data(), scales.data(), n_x, cols, blocks}; }
};

inline TestQ8 random_q8(size_t n_x, size_t cols, std::mt19937& rng) {
    TestQ8 t;
    t.n_x = n_x;
    t.cols = cols;
    t.blocks = (cols + kQ8Block - 1) / kQ8Block;
    t.q.resize(n_x * t.blocks * kQ8Block);
    std::uniform_int_distribution<int> byte(-128, 127);
    for (int8_t& v : t.q) v = static_cast<int8_t>(byte(rng));
    t.scales.resize(n_x * t.blocks);
    std::uniform_real_distribution<float> exponent(-12.0f, 4.0f);
    for (float& d : t.scales) d = std::exp2(exponent(rng));
    return t;
}

inline bool same_bits_or_both_nan(float a, float b) {
    if (std::isnan(a) && std::isnan(b)) return true;
    return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace stormo::testing
