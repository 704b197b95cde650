// The toolkit's multi-head latent attention on random F32 weights, in the variants a family may
// ask for: a plain q_proj (no q_lora_rank, as DeepSeek configs with q_lora_rank null), the
// interleaved rope layout (transformers' rope_interleave), a selector's sparse mask. The
// absorbed path (what runs) must agree with the expanded one (transformers' order); the
// interleaved layout must give exactly the bits of the split-half one on weights whose rope rows
// are stored in pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "compute/worker_pool.hpp"
#include "kernel_test_support.hpp"
#include "stormo/toolkit/mla.hpp"

namespace stormo::toolkit {
namespace {

constexpr size_t kHidden = 24;

// Random weights of one layer, F32 out_in, with the bytes behind them.
struct Layer {
    MlaShape shape;
    std::vector<float> q_a, q_b, q, kv_a, kv_b, o;
    MlaWeights w;
};

WeightView f32(const std::vector<float>& m, size_t rows, size_t cols) {
    return WeightView{WeightFormat::F32, Layout::out_in, m.data(), nullptr, rows, cols};
}

void make_layer(Layer& l, std::mt19937& rng) {
    const MlaShape& s = l.shape;
    const size_t qk_rows = s.heads * s.qk();
    if (s.q_lora_rank > 0) {
        l.q_a = testing::random_floats(s.q_lora_rank * kHidden, rng, -0.5f, 0.5f);
        l.q_b = testing::random_floats(qk_rows * s.q_lora_rank, rng, -0.5f, 0.5f);
        l.w.q_a = f32(l.q_a, s.q_lora_rank, kHidden);
        l.w.q_a_norm = testing::random_floats(s.q_lora_rank, rng, 0.5f, 1.5f);
        l.w.q_b = f32(l.q_b, qk_rows, s.q_lora_rank);
    } else {
        l.q = testing::random_floats(qk_rows * kHidden, rng, -0.5f, 0.5f);
        l.w.q = f32(l.q, qk_rows, kHidden);
    }
    l.kv_a = testing::random_floats((s.kv_lora_rank + s.rope) * kHidden, rng, -0.5f, 0.5f);
    l.kv_b = testing::random_floats(s.heads * (s.nope + s.v) * s.kv_lora_rank, rng, -0.5f, 0.5f);
    l.o = testing::random_floats(kHidden * s.heads * s.v, rng, -0.5f, 0.5f);
    l.w.kv_a = f32(l.kv_a, s.kv_lora_rank + s.rope, kHidden);
    l.w.kv_a_norm = testing::random_floats(s.kv_lora_rank, rng, 0.5f, 1.5f);
    l.w.kv_b = f32(l.kv_b, s.heads * (s.nope + s.v), s.kv_lora_rank);
    l.w.o = f32(l.o, kHidden, s.heads * s.v);
    l.w.absorbed = AbsorbedKvB{l.w.kv_b, s.nope, s.v, s.kv_lora_rank, {}};
}

// Rows `first` .. first + dim of `m` (cols wide), stored as interleaved pairs: the row a
// split-half layout has at first + i (i < dim/2) goes to first + 2i, at first + dim/2 + i to first + 2i + 1.
void interleave_rows(std::vector<float>& m, size_t cols, size_t first, size_t dim) {
    const std::vector<float> split(m.begin() + static_cast<long>(first * cols), m.begin() + static_cast<long>((first + dim) * cols));
    for (size_t i = 0; i < dim / 2; ++i) {
        std::copy_n(split.data() + i * cols, cols, m.data() + (first + 2 * i) * cols);
        std::copy_n(split.data() + (dim / 2 + i) * cols, cols, m.data() + (first + 2 * i + 1) * cols);
    }
}

class Outputs final : public Tracer {
public:
    bool wants(int) const override { return true; }
    void record(const std::string& name, int, const float* data, size_t n_rows, size_t width,
                std::span<const int64_t>) override {
        seen[name].assign(data, data + n_rows * width);
    }
    std::map<std::string, std::vector<float>> seen;
};

struct Result {
    std::vector<float> out;
    std::map<std::string, std::vector<float>> traced;
};

// Token by token over `n` positions, as decode runs; the cache is the session's, one row a position.
Result run(const Layer& l, MlaRopeLayout layout, const std::vector<float>& x, size_t n, const MlaSelector& select = {}) {
    const MlaShape& s = l.shape;
    RopeParams params;
    params.theta = 10000.0;
    const Rope rope(params, static_cast<int>(s.rope));
    MlaOptions o;
    o.shape = s;
    o.rope = &rope;
    o.rope_layout = layout;
    o.scale = static_cast<float>(std::pow(static_cast<double>(s.qk()), -0.5));
    o.who = "test";
    std::vector<float> latents(n * s.kv_lora_rank), rope_keys(n * s.rope);
    float* const pages[2] = {latents.data(), rope_keys.data()};
    const KvView kv{{KvBufferView{&pages[0], 0, n, n, s.kv_lora_rank}, KvBufferView{&pages[1], 0, n, n, s.rope}}, n};
    const Compute c{&reference_kernels(), nullptr, false};
    Result r;
    r.out.resize(n * kHidden);
    Outputs tracer;
    for (size_t t = 0; t < n; ++t) {
        const int64_t position = static_cast<int64_t>(t);
        const StepContext ctx{std::span<const int64_t>(&position, 1), &tracer};
        std::vector<float> row(x.begin() + static_cast<long>(t * kHidden), x.begin() + static_cast<long>((t + 1) * kHidden));
        const Rows normed{row.data(), 1, kHidden};
        const SequenceKv seq{0, 1, kv};
        const Expected<void> done = build_mla_attention(c, 0, ctx, l.w, o, normed, std::span(&seq, 1), Rows{r.out.data() + t * kHidden, 1, kHidden}, select);
        EXPECT_TRUE(done.has_value()) << done.error().message;
    }
    r.traced = tracer.seen;
    return r;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0.0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
    return d;
}

TEST(ToolkitMla, DeinterleaveGathersPairsIntoHalves) {
    std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7};
    deinterleave_rope(x.data(), x.size());
    EXPECT_EQ(x, (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(ToolkitMla, WithoutASelectorEveryRowAttendsItsPast) {
    const std::vector<int64_t> positions = {3, 4};
    const KeptPositions kept = all_past_positions(positions);
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_EQ(kept[0], (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(kept[1], (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(ToolkitMla, AbsorbedEqualsExpandedWithAndWithoutQLoraRank) {
    for (const size_t q_rank : {size_t{0}, size_t{16}}) {
        SCOPED_TRACE(q_rank);
        std::mt19937 rng(7);
        Layer l;
        l.shape = {3, q_rank, 12, 8, 4, 6};
        make_layer(l, rng);
        const size_t n = 6;
        const std::vector<float> x = testing::random_floats(n * kHidden, rng);
        const Result r = run(l, MlaRopeLayout::split_half, x, n);
        ASSERT_EQ(r.traced.at("attn_out_expanded").size(), kHidden);
        // The last step's output by both paths: float sums in another order, nothing more.
        const std::vector<float> last(r.out.end() - kHidden, r.out.end());
        EXPECT_LT(max_abs_diff(last, r.traced.at("attn_out_expanded")), 1e-5);
        EXPECT_EQ(last, r.traced.at("attn_out"));
    }
}

// The absorbed attention head by head and key by key: per (row, head) q_lat, a dot per kept key,
// the softmax, an axpy per key.
std::vector<float> absorbed_per_head(const MlaShape& s, const std::vector<float>& q, const KeptPositions& kept,
                                     const AbsorbedKvB& kvb, const KvView& kv, float scale) {
    const KernelTable& kt = reference_kernels();
    const Compute c{&kt, nullptr, false};
    std::vector<float> context(kept.size() * s.heads * s.v), q_lat(s.kv_lora_rank), pooled(s.kv_lora_rank);
    for (size_t r = 0; r < kept.size(); ++r)
        for (size_t h = 0; h < s.heads; ++h) {
            const float* qh = q.data() + (r * s.heads + h) * s.qk();
            matmul(c, kvb.k_half(h), qh, 1, q_lat.data());
            std::vector<float> scores(kept[r].size());
            for (size_t j = 0; j < kept[r].size(); ++j)
                scores[j] = (kt.dot(q_lat.data(), kv.at(0, kept[r][j]), s.kv_lora_rank) +
                             kt.dot(qh + s.nope, kv.at(1, kept[r][j]), s.rope)) *
                            scale;
            kt.softmax(scores.data(), scores.size());
            std::fill(pooled.begin(), pooled.end(), 0.0f);
            for (size_t j = 0; j < kept[r].size(); ++j) kt.axpy(scores[j], kv.at(0, kept[r][j]), pooled.data(), s.kv_lora_rank);
            matmul(c, kvb.v_half(h), pooled.data(), 1, context.data() + (r * s.heads + h) * s.v);
        }
    return context;
}

TEST(ToolkitMla, AbsorbedRunsOfKeysGiveTheBitsOfOneHeadAndKeyAtATime) {
    // 8 heads, 300 kept keys in pages of 50 (the kernels' runs break at every page end), a
    // scattered selection too; one row (decode) and five, with no pool and pools of 2 and 3 threads.
    std::mt19937 rng(11);
    Layer l;
    l.shape = {8, 0, 16, 8, 4, 6};
    make_layer(l, rng);
    const MlaShape& s = l.shape;
    const size_t capacity = 300, page_rows = 50;
    std::vector<float> latents = testing::random_floats(capacity * s.kv_lora_rank, rng, -1.0f, 1.0f);
    std::vector<float> rope_keys = testing::random_floats(capacity * s.rope, rng, -1.0f, 1.0f);
    std::vector<float*> latent_pages, rope_pages;
    for (size_t k = 0; k < capacity / page_rows; ++k) {
        latent_pages.push_back(latents.data() + k * page_rows * s.kv_lora_rank);
        rope_pages.push_back(rope_keys.data() + k * page_rows * s.rope);
    }
    const KvView kv{{KvBufferView{latent_pages.data(), 0, page_rows, capacity, s.kv_lora_rank},
                     KvBufferView{rope_pages.data(), 0, page_rows, capacity, s.rope}},
                    capacity};
    for (const size_t rows : {size_t{1}, size_t{5}}) {
        std::vector<int64_t> positions;
        for (size_t r = 0; r < rows; ++r) positions.push_back(static_cast<int64_t>(capacity - rows + r));
        KeptPositions kept = all_past_positions(positions);
        if (rows > 1) {  // a selector's scattered keys in one row
            kept[1].clear();
            for (int64_t p = 0; p < positions[1]; p += 3) kept[1].push_back(p);
        }
        const std::vector<float> q = testing::random_floats(rows * s.heads * s.qk(), rng);
        const std::vector<float> want = absorbed_per_head(s, q, kept, l.w.absorbed, kv, 0.25f);
        WorkerPool two(2), three(3);
        for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), static_cast<ThreadPool*>(&two), static_cast<ThreadPool*>(&three)}) {
            const SequenceKv seq{0, rows, kv};
            std::vector<float> got;
            got.resize(want.size(), -1.0f);
            mla_attend_absorbed(Compute{&reference_kernels(), pool, false}, s, positions, q, kept, l.w.absorbed,
                                std::span(&seq, 1), 0.25f, got);
            EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
                << rows << " rows, " << (pool != nullptr ? pool->size() : 0) << " threads";
        }
    }
}

TEST(ToolkitMla, InterleavedRopeGivesTheSplitHalfBitsOnPairedRows) {
    for (const size_t q_rank : {size_t{0}, size_t{16}}) {
        SCOPED_TRACE(q_rank);
        std::mt19937 rng(11);
        Layer split;
        split.shape = {2, q_rank, 12, 8, 6, 6};
        make_layer(split, rng);
        Layer paired = split;
        const MlaShape& s = split.shape;
        std::vector<float>& q = q_rank > 0 ? paired.q_b : paired.q;
        const size_t q_cols = q_rank > 0 ? q_rank : kHidden;
        for (size_t h = 0; h < s.heads; ++h) interleave_rows(q, q_cols, h * s.qk() + s.nope, s.rope);
        interleave_rows(paired.kv_a, kHidden, s.kv_lora_rank, s.rope);
        // The copies' views point into their own bytes.
        if (q_rank > 0) {
            paired.w.q_a = f32(paired.q_a, q_rank, kHidden);
            paired.w.q_b = f32(paired.q_b, s.heads * s.qk(), q_rank);
        } else {
            paired.w.q = f32(paired.q, s.heads * s.qk(), kHidden);
        }
        paired.w.kv_a = f32(paired.kv_a, s.kv_lora_rank + s.rope, kHidden);
        paired.w.kv_b = f32(paired.kv_b, s.heads * (s.nope + s.v), s.kv_lora_rank);
        paired.w.o = f32(paired.o, kHidden, s.heads * s.v);
        paired.w.absorbed.matrix = paired.w.kv_b;
        const size_t n = 5;
        const std::vector<float> x = testing::random_floats(n * kHidden, rng);
        const Result want = run(split, MlaRopeLayout::split_half, x, n);
        const Result got = run(paired, MlaRopeLayout::interleaved, x, n);
        ASSERT_EQ(got.out.size(), want.out.size());
        EXPECT_EQ(std::memcmp(got.out.data(), want.out.data(), want.out.size() * sizeof(float)), 0);
    }
}

TEST(ToolkitMla, ASelectorsMaskIsWhatRowsAttend) {
    std::mt19937 rng(5);
    Layer l;
    l.shape = {2, 8, 12, 8, 4, 6};
    make_layer(l, rng);
    const size_t n = 4;
    const std::vector<float> x = testing::random_floats(n * kHidden, rng);
    // Only the row's own position: softmax of one score is 1, so the context is that position's
    // value and the output differs from dense attention past the first row.
    const MlaSelector own = [](const MlaSelectionInput& in) {
        EXPECT_EQ(in.q_latent.size(), in.positions.size() * 8);
        KeptPositions kept(in.positions.size());
        for (size_t r = 0; r < in.positions.size(); ++r) kept[r] = {in.positions[r]};
        return kept;
    };
    const Result sparse = run(l, MlaRopeLayout::split_half, x, n, own);
    const Result dense = run(l, MlaRopeLayout::split_half, x, n);
    EXPECT_EQ(std::memcmp(sparse.out.data(), dense.out.data(), kHidden * sizeof(float)), 0);
    EXPECT_NE(std::memcmp(sparse.out.data() + 3 * kHidden, dense.out.data() + 3 * kHidden, kHidden * sizeof(float)), 0);
    EXPECT_LT(max_abs_diff(std::vector<float>(sparse.out.end() - kHidden, sparse.out.end()),
                           sparse.traced.at("attn_out_expanded")),
              1e-5);
}

}  // namespace
}  // namespace stormo::toolkit
