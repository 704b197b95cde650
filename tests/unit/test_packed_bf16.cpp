// BF16_PACKED (stormo/packed_bf16_layout.hpp): packing is lossless whatever the values, it is
// declined where it would not pay, and every kernel table reads a packed matrix to exactly the bits
// its BF16 kernel gives the BF16 matrix, so a model answers the same with its dense matrices
// packed or plain.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "head_bound_support.hpp"
#include "oracle_support.hpp"
#include "stormo/packed_bf16.hpp"

namespace stormo {
namespace {

using testing::head_computes;

struct Bf16Matrix {
    size_t rows = 0, cols = 0;
    std::vector<uint16_t> bits;
    WeightView view() const {
        WeightView v;
        v.format = WeightFormat::BF16;
        v.layout = Layout::out_in;
        v.data = bits.data();
        v.rows = rows;
        v.cols = cols;
        return v;
    }
};

uint16_t to_bf16(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return static_cast<uint16_t>(b >> 16);
}

// Weights as checkpoints hold them (normal, scale 1/sqrt(cols)), with a share `odd` of values no
// row table holds: outliers, tiny and subnormal values, zeros of both signs, infinities, NaN.
Bf16Matrix weights(size_t rows, size_t cols, double odd, std::mt19937& rng, bool finite = false) {
    Bf16Matrix m{rows, cols, std::vector<uint16_t>(rows * cols)};
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::uniform_int_distribution<int> pick(0, finite ? 4 : 6);
    const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x7F7F, 0x7F80, 0xFFC1};
    for (uint16_t& b : m.bits) {
        b = to_bf16(normal(rng));
        if (u(rng) >= odd) continue;
        const int k = pick(rng);
        if (k < 2) b = to_bf16(normal(rng) * std::ldexp(1.0f, k == 0 ? 40 : -40));
        else b = specials[k];
    }
    return m;
}

// Every 16-bit pattern equally likely: up to 256 high bytes in a row.
Bf16Matrix random_bits(size_t rows, size_t cols, std::mt19937& rng) {
    Bf16Matrix m{rows, cols, std::vector<uint16_t>(rows * cols)};
    std::uniform_int_distribution<uint32_t> d(0, 0xFFFF);
    for (uint16_t& b : m.bits) b = static_cast<uint16_t>(d(rng));
    return m;
}

std::vector<uint16_t> decoded_row(const WeightView& packed, size_t o) {
    std::vector<uint16_t> out(packed_bf16::groups(packed.cols) * packed_bf16::kGroup);
    decode_packed_bf16_row(packed_bf16::decode_groups, packed, o, out.data());
    out.resize(packed.cols);
    return out;
}

void expect_lossless(const Bf16Matrix& m, const std::string& what) {
    const std::optional<packed_bf16::Packed> p = packed_bf16::pack(m.view(), nullptr, 100.0);
    ASSERT_TRUE(p.has_value()) << what;
    EXPECT_EQ(p->view.format, WeightFormat::BF16_PACKED);
    EXPECT_EQ(packed_bf16::bytes(p->view), p->storage->size()) << what;
    const KernelTable& ref = reference_kernels();
    std::vector<float> want(m.cols), got(m.cols);
    for (size_t o = 0; o < m.rows; ++o) {
        const std::vector<uint16_t> row = decoded_row(p->view, o);
        ASSERT_EQ(std::memcmp(row.data(), m.bits.data() + o * m.cols, m.cols * 2), 0) << what << ", row " << o;
        ref.row_to_f32[static_cast<size_t>(WeightFormat::BF16)](m.view(), o, want.data());
        ref.row_to_f32[static_cast<size_t>(WeightFormat::BF16_PACKED)](p->view, o, got.data());
        ASSERT_EQ(std::memcmp(want.data(), got.data(), m.cols * 4), 0) << what << ", row_to_f32 row " << o;
    }
}

TEST(PackedBf16, TheSlotsAreAPermutationAndRowsStayAligned) {
    std::set<size_t> slots;
    for (size_t j = 0; j < packed_bf16::kGroup; ++j) slots.insert(packed_bf16::slot_of(j));
    EXPECT_EQ(slots.size(), packed_bf16::kGroup);
    EXPECT_EQ(*slots.rbegin(), packed_bf16::kGroup - 1);
    // gpt-oss's 2880-value rows: 45 groups of 96 bytes and the table, 0.753 of BF16.
    EXPECT_EQ(packed_bf16::row_bytes(2880), 4336u);
    EXPECT_EQ(packed_bf16::row_bytes(1) % packed_bf16::kRowAlign, 0u);
}

TEST(PackedBf16, PackingIsLossless) {
    std::mt19937 rng(11);
    for (size_t cols : {1, 2, 63, 64, 65, 127, 200, 2880})
        for (size_t rows : {1, 7, 33})
            for (double odd : {0.0, 0.01, 0.3})
                expect_lossless(weights(rows, cols, odd, rng), std::to_string(rows) + "x" + std::to_string(cols) +
                                                                   ", odd share " + std::to_string(odd));
    expect_lossless(random_bits(9, 300, rng), "random bits");
    // Rows of one value, and of all zeros: a table of one entry.
    Bf16Matrix same{3, 70, std::vector<uint16_t>(210, 0x3F80)};
    expect_lossless(same, "constant rows");
    Bf16Matrix zeros{2, 65, std::vector<uint16_t>(130, 0)};
    expect_lossless(zeros, "zero rows");
}

TEST(PackedBf16, PatchesOnlyWhatTheTableMisses) {
    std::mt19937 rng(12);
    // 14 high bytes (sign x exponents 121..132): every value in the table, no patch.
    const testing::TestMatrix fits = testing::random_matrix(WeightFormat::BF16_PACKED, Layout::out_in, 20, 100, rng);
    EXPECT_EQ(fits.view().patch_begin[20], 0u);
    // Random bits: most of a 300-value row misses its 16 entries.
    const std::optional<packed_bf16::Packed> p = packed_bf16::pack(random_bits(9, 300, rng).view(), nullptr, 100.0);
    ASSERT_TRUE(p);
    EXPECT_GT(p->view.patch_begin[9], 9u * 150u);
    for (size_t o = 0; o < 9; ++o)
        for (uint32_t k = p->view.patch_begin[o] + 1; k < p->view.patch_begin[o + 1]; ++k)
            EXPECT_LT(packed_bf16::patch_column(p->view.patches[k - 1]), packed_bf16::patch_column(p->view.patches[k]));
}

TEST(PackedBf16, PackingIsDeclinedWhereItWouldNotPay) {
    std::mt19937 rng(13);
    const Bf16Matrix noise = random_bits(8, 256, rng);
    EXPECT_FALSE(packed_bf16::pack(noise.view(), nullptr, 0.9).has_value()) << "random bits need too many patches";
    const Bf16Matrix typical = weights(8, 256, 0.001, rng);
    const std::optional<packed_bf16::Packed> p = packed_bf16::pack(typical.view(), nullptr, 0.9);
    ASSERT_TRUE(p.has_value());
    EXPECT_LT(p->storage->size(), 0.8 * 2 * 8 * 256);
    // Only BF16 out_in matrices pack.
    WeightView in_out = typical.view();
    in_out.layout = Layout::in_out;
    EXPECT_FALSE(packed_bf16::pack(in_out, nullptr, 100.0).has_value());
    WeightView f16 = typical.view();
    f16.format = WeightFormat::F16;
    EXPECT_FALSE(packed_bf16::pack(f16, nullptr, 100.0).has_value());
}

// The packed matrix through stormo::matmul and through the kernel itself on sub-ranges gives the
// BF16 matrix's bits, on the reference and on every kernels plugin usable here.
TEST(PackedBf16, EveryKernelTableGivesTheBf16Bits) {
    std::mt19937 rng(14);
    const auto& hc = head_computes();
    for (size_t rows : {1, 5, 8, 17, 67})
        for (size_t cols : {1, 3, 64, 65, 130, 2880}) {
            const Bf16Matrix m = weights(rows, cols, 0.01, rng, true);
            WorkerPool pool(1);
            const std::optional<packed_bf16::Packed> p = packed_bf16::pack(m.view(), &pool, 100.0);
            ASSERT_TRUE(p);
            for (size_t n_x : {1, 2, 3, 4, 5, 7, 9}) {
                const std::vector<float> x = testing::random_floats(n_x * cols, rng);
                for (size_t k = 0; k < hc.computes.size(); ++k) {
                    const Compute& c = hc.computes[k];
                    const std::string what = hc.names[k] + ", " + std::to_string(rows) + "x" + std::to_string(cols) +
                                             ", n_x " + std::to_string(n_x);
                    std::vector<float> want(n_x * rows), got(n_x * rows, -1.0f);
                    matmul(c, m.view(), x.data(), n_x, want.data());
                    matmul(c, p->view, x.data(), n_x, got.data());
                    ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0) << what;
                    const MatmulFn packed = c.table->matmul[static_cast<size_t>(WeightFormat::BF16_PACKED)][0];
                    ASSERT_NE(packed, nullptr) << what;
                    const size_t begin = rows / 3, end = rows - rows / 4;
                    std::vector<float> part(n_x * rows, -1.0f);
                    packed(p->view, x.data(), n_x, cols, part.data(), rows, begin, end);
                    for (size_t r = 0; r < n_x; ++r)
                        for (size_t o = begin; o < end; ++o)
                            ASSERT_EQ(std::memcmp(&part[r * rows + o], &want[r * rows + o], 4), 0)
                                << what << ", outputs [" << begin << ", " << end << "), row " << r << " output " << o;
                }
            }
        }
}

// A model's logits are the same bits with its dense BF16 matrices packed or plain, and a packed
// engine holds fewer dense bytes.
TEST(PackedBf16, AModelAnswersTheSameBitsPackedOrPlain) {
    for (const std::string& name : testing::fixture_names()) {
        std::vector<std::vector<float>> logits;
        std::vector<uint64_t> dense;
        for (DenseBf16 form : {DenseBf16::packed, DenseBf16::plain}) {
            EngineOptions o;
            o.setup.model_dir = testing::fixture_dir(name);
            o.threads = 2;
            o.dense_bf16 = form;
            auto engine = Engine::open(o);
            ASSERT_TRUE(engine) << name << ": " << engine.error().message;
            EXPECT_EQ((*engine)->packed_bytes().empty(), form == DenseBf16::plain) << name;
            dense.push_back((*engine)->dense_bytes());
            const std::vector<int32_t> ids = {1, 5, 9, 2, 7, 3};
            auto session = (*engine)->new_session(ids.size());
            ASSERT_TRUE(session);
            ForwardOptions all;
            all.all_logits = true;
            auto out = (*engine)->pipeline().forward(**session, ids, all);
            ASSERT_TRUE(out) << name << ": " << out.error().message;
            logits.push_back(std::move(*out));
        }
        ASSERT_EQ(logits[0].size(), logits[1].size()) << name;
        EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * 4), 0) << name;
        EXPECT_LT(dense[0], dense[1]) << name;
    }
}

// The command line: the same tokens packed or plain, a bad form refused with exit 2 and the values.
TEST(PackedBf16, TheOptionChoosesTheFormAndRefusesOthers) {
    std::string model = "'";  // one shell word
    model += testing::demo_dir();
    model += "'";
    const auto packed = test::run_cli("generate --model " + model + " --ids 1,2,3,40,4,5,6,45 --max-tokens 12");
    const auto plain =
        test::run_cli("generate --model " + model + " --ids 1,2,3,40,4,5,6,45 --max-tokens 12 --dense-bf16 plain");
    ASSERT_EQ(packed.status, 0) << packed.err;
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(packed.out, plain.out);
    const auto bad = test::run_cli("generate --model " + model + " --ids 1,2 --dense-bf16 zipped");
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--dense-bf16 'zipped': must be packed or plain"), std::string::npos) << bad.err;
    auto yaml = parse_engine_config("dense_bf16: sometimes\n", "t.yaml");
    ASSERT_FALSE(yaml);
    EXPECT_NE(yaml.error().message.find("dense_bf16 in t.yaml 'sometimes': must be packed or plain"), std::string::npos)
        << yaml.error().message;
    auto ok = parse_engine_config("dense_bf16: plain\n", "t.yaml");
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_EQ(ok->dense_bf16, DenseBf16::plain);
    EXPECT_EQ(default_engine_config().dense_bf16, DenseBf16::packed);
}

// `stormo bench` counts what a packed engine reads: the packed matrices' own bytes.
TEST(PackedBf16, BenchCountsThePackedBytes) {
    std::string model = "'";
    model += testing::fixture_dir("gpt_oss");
    model += "'";
    const std::string args = " --prompt-tokens 8 --gen-tokens 4 --json --ram-probe 16MiB --ram-repeats 1 --disk-probe 0";
    const auto packed = test::run_cli("bench --model " + model + args);
    const auto plain = test::run_cli("bench --model " + model + args + " --dense-bf16 plain");
    ASSERT_EQ(packed.status, 0) << packed.err;
    ASSERT_EQ(plain.status, 0) << plain.err;
    auto a = Json::parse(packed.out, "bench");
    auto b = Json::parse(plain.out, "bench");
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a->find("dense_bf16")->as_string(), "packed");
    EXPECT_EQ(*b->find("dense_bf16")->as_string(), "plain");
    const int64_t matrices = *a->find("dense_bf16_packed_matrices")->as_int();
    const int64_t bytes = *a->find("dense_bf16_packed_bytes")->as_int();
    const int64_t stored = *a->find("dense_bf16_packed_stored_bytes")->as_int();
    EXPECT_GT(matrices, 0);
    EXPECT_LT(bytes, stored);
    EXPECT_EQ(*b->find("dense_bf16_packed_matrices")->as_int(), 0);
    // Every packed byte is one fewer byte read a token (the head's share is read by bound).
    EXPECT_LT(*a->find("dense_bytes_per_token")->as_double(), *b->find("dense_bytes_per_token")->as_double());
    EXPECT_LT(*a->find("dense_resident_bytes")->as_double(), *b->find("dense_resident_bytes")->as_double());
}

}  // namespace
}  // namespace stormo
