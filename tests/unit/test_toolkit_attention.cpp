// The toolkit's causal attention against the plain per-head loop it replaced: for every head, a
// dot per visible key (times the scale), the softmax (with the sink), then an axpy per key. The
// grouped form (dot_many / axpy_many over the heads sharing a KV head, in runs that break where a
// ring wraps or a page ends) must give those bits exactly, with or without the pool, and the same
// traced probabilities.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compute/worker_pool.hpp"
#include "kernel_test_support.hpp"
#include "stormo/toolkit/attention.hpp"

namespace stormo::toolkit {
namespace {

struct Case {
    GqaShape shape;
    int64_t window = 0;        // 0: full attention
    size_t ring_rows = 0;      // rows of each KV buffer
    std::vector<int64_t> positions;
    bool sinks = true;
    size_t page_rows = 0;      // > 0: the rows in pages of this many, in reverse order in memory
};

struct Inputs {
    std::vector<float> q, keys, values, sinks;
    std::vector<float*> key_pages, value_pages;
    KvView kv;
    SequenceKv seq;  // every row of the block in one sequence, over kv
};

Inputs make_inputs(const Case& c, std::mt19937& rng) {
    Inputs in;
    in.q = testing::random_floats(c.positions.size() * c.shape.q_width(), rng, -2.0f, 2.0f);
    in.keys = testing::random_floats(c.ring_rows * c.shape.kv_width(), rng, -2.0f, 2.0f);
    in.values = testing::random_floats(c.ring_rows * c.shape.kv_width(), rng, -2.0f, 2.0f);
    if (c.sinks) in.sinks = testing::random_floats(c.shape.n_heads, rng, -1.0f, 1.0f);
    const size_t page_rows = c.page_rows > 0 ? c.page_rows : c.ring_rows;
    const size_t n_pages = (c.ring_rows + page_rows - 1) / page_rows;
    in.keys.resize(n_pages * page_rows * c.shape.kv_width());
    in.values.resize(n_pages * page_rows * c.shape.kv_width());
    for (size_t k = 0; k < n_pages; ++k) {
        const size_t at = (n_pages - 1 - k) * page_rows * c.shape.kv_width();
        in.key_pages.push_back(in.keys.data() + at);
        in.value_pages.push_back(in.values.data() + at);
    }
    in.kv.buffers = {KvBufferView{in.key_pages.data(), 0, page_rows, c.ring_rows, c.shape.kv_width()},
                     KvBufferView{in.value_pages.data(), 0, page_rows, c.ring_rows, c.shape.kv_width()}};
    in.kv.capacity = 1u << 20;
    in.seq = SequenceKv{0, c.positions.size(), in.kv};
    return in;
}

// The loop attend_causal ran before it grouped heads, written out here.
std::vector<float> per_head(const KernelTable& kt, const GqaOptions& o, const Case& c, const Inputs& in,
                            std::vector<float>* probs, size_t probs_width) {
    const size_t hd = o.shape.head_dim, heads = o.shape.n_heads, group = heads / o.shape.n_kv_heads;
    const size_t q_width = o.shape.q_width();
    const size_t key_columns = probs != nullptr ? probs_width / heads - 1 : 0;
    std::vector<float> context(c.positions.size() * q_width);
    std::vector<float> scores;
    for (size_t r = 0; r < c.positions.size(); ++r)
        for (size_t h = 0; h < heads; ++h) {
            const int64_t pos = c.positions[r];
            const size_t first = static_cast<size_t>(first_visible_key(pos, o.window));
            const size_t n_keys = static_cast<size_t>(pos) + 1 - first;
            const size_t kv_offset = (h / group) * hd;
            scores.assign(n_keys + 1, 0.0f);
            for (size_t j = 0; j < n_keys; ++j)
                scores[j] = kt.dot(in.q.data() + r * q_width + h * hd,
                                   in.kv.at(0, static_cast<int64_t>(first + j)) + kv_offset,
                                   hd) *
                            o.scale;
            float sink_mass = 0.0f;
            if (!in.sinks.empty()) sink_mass = softmax_with_sink(scores.data(), n_keys, in.sinks[h], kt.softmax);
            else kt.softmax(scores.data(), n_keys);
            float* out = context.data() + r * q_width + h * hd;
            for (size_t j = 0; j < n_keys; ++j)
                kt.axpy(scores[j], in.kv.at(1, static_cast<int64_t>(first + j)) + kv_offset, out, hd);
            if (probs != nullptr) {
                float* p = probs->data() + r * probs_width + h * (key_columns + 1);
                for (size_t j = 0; j < n_keys && first + j < key_columns; ++j) p[first + j] = scores[j];
                p[key_columns] = sink_mass;
            }
        }
    return context;
}

void check(const Case& c, const std::string& what) {
    std::mt19937 rng(41);
    const Inputs in = make_inputs(c, rng);
    GqaOptions o;
    o.shape = c.shape;
    o.scale = 0.125f;
    o.window = c.window;
    const KernelTable& kt = reference_kernels();
    const size_t q_width = c.shape.q_width();
    const int64_t last = c.positions.back();
    const size_t probs_width = c.shape.n_heads * (static_cast<size_t>(last) + 2);

    std::vector<float> want_probs(c.positions.size() * probs_width, 0.0f);
    const std::vector<float> want = per_head(kt, o, c, in, &want_probs, probs_width);

    WorkerPool pool(2);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), static_cast<ThreadPool*>(&pool)}) {
        const Compute compute{&kt, p};
        std::vector<float> got(c.positions.size() * q_width, -1.0f);
        std::vector<float> got_probs(c.positions.size() * probs_width, 0.0f);
        attend_causal(compute, o, c.positions, in.q.data(), in.sinks, std::span(&in.seq, 1), got.data(), &got_probs, probs_width);
        const std::string where = what + (p != nullptr ? ", 2 threads" : ", no pool");
        ASSERT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << where;
        ASSERT_EQ(std::memcmp(got_probs.data(), want_probs.data(), want_probs.size() * sizeof(float)), 0) << where;
        std::vector<float> untraced(got.size(), -1.0f);
        attend_causal(compute, o, c.positions, in.q.data(), in.sinks, std::span(&in.seq, 1), untraced.data(), nullptr, 0);
        ASSERT_EQ(std::memcmp(untraced.data(), want.data(), want.size() * sizeof(float)), 0) << where << ", untraced";
    }
}

TEST(ToolkitAttention, GroupedHeadsGiveThePerHeadLoopsBits) {
    // Full attention, a block of rows (prefill) and a lone row (decode), eight heads a KV head.
    check({{16, 2, 64}, 0, 64, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, true}, "full, block");
    check({{16, 2, 64}, 0, 64, {40}, true}, "full, one row");
    // A head size with a vector tail, no sinks, one head a KV head (no grouping) and three.
    check({{4, 4, 20}, 0, 32, {0, 5, 9, 13}, false}, "head_dim 20, no sinks");
    check({{6, 2, 72}, 0, 48, {17, 30}, true}, "three heads a KV head");
}

TEST(ToolkitAttention, SlidingWindowsThatWrapTheRing) {
    // A window of 8 in a ring of 8 rows: positions past 8 see keys in two runs of the ring.
    for (int64_t pos : {3, 7, 8, 9, 12, 15, 16, 23})
        check({{8, 2, 64}, 8, 8, {pos}, true}, "window 8, position " + std::to_string(pos));
    check({{8, 2, 64}, 8, 8, {20, 21, 22, 23}, true}, "window 8, a block of four");
    // A ring larger than the window (the session keeps more rows than the layer sees).
    check({{8, 1, 32}, 5, 11, {9, 10, 11, 12, 13, 14}, true}, "window 5 in 11 rows");
}

TEST(ToolkitAttention, PagedKeysGiveTheBitsOfContiguousOnes) {
    // A session's full-attention rows live in pages: the runs of keys break at every page end.
    for (size_t page_rows : {1, 3, 16})
        check({{16, 2, 64}, 0, 64, {0, 1, 2, 15, 16, 17, 33, 47, 48, 63}, true, page_rows},
              "full, pages of " + std::to_string(page_rows));
    check({{6, 2, 72}, 0, 48, {17, 30}, false, 4}, "three heads a KV head, pages of 4");
    // A sliding window over pages (a window sees keys across two or three of them).
    check({{8, 2, 64}, 8, 64, {5, 9, 20, 21, 22, 23}, true, 4}, "window 8, pages of 4");
}

TEST(ToolkitAttention, RowBlocksOverChunksOfKeysGiveTheBitsOfOneRowAtATime) {
    // A prefill's rows share each chunk of 256 keys (attention.cpp's kRowBlock, kKeyChunk): 40
    // rows (blocks of up to 16) seeing 561 to 600 keys cross two chunk ends, in pages of 100 rows
    // whose ends fall elsewhere; rows of the start of a prompt see fewer keys than the block's last.
    std::vector<int64_t> late, early;
    for (int64_t p = 560; p < 600; ++p) late.push_back(p);
    for (int64_t p = 0; p < 40; ++p) early.push_back(p);
    check({{8, 2, 64}, 0, 600, late, true, 100}, "full, 40 rows past two chunk ends");
    check({{8, 2, 64}, 0, 600, early, false, 100}, "full, the first 40 rows");
    // A window of 300 wider than a chunk: each row's first key moves with it, inside a chunk.
    check({{8, 2, 64}, 300, 600, late, true, 100}, "window 300, 40 rows");
}

}  // namespace
}  // namespace stormo::toolkit
