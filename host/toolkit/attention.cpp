// Grouped-query causal attention (see stormo/toolkit/attention.hpp).
#include "stormo/toolkit/attention.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace stormo::toolkit {
namespace {

void store_kv(BlockKv kv, std::span<const int64_t> positions, const std::vector<float>& k, const std::vector<float>& v,
              size_t kv_width) {
    for (const SequenceKv& seq : kv)
        for (size_t r = seq.first_row; r < seq.first_row + seq.n_rows; ++r) {
            std::copy_n(k.data() + r * kv_width, kv_width, seq.kv.at(0, positions[r]));
            std::copy_n(v.data() + r * kv_width, kv_width, seq.kv.at(1, positions[r]));
        }
}

}  // namespace

Expected<void> check_attention_block(const std::string& who, int layer, const StepContext& ctx, const Rows& normed,
                                     BlockKv kv, size_t kv_buffers) {
    const std::string where = who + " attention, layer " + std::to_string(layer);
    if (ctx.positions.size() < normed.n)
        return fail(ErrorKind::internal, where + ": the host passed fewer positions than rows");
    size_t covered = 0;
    for (const SequenceKv& seq : kv) {
        if (seq.first_row != covered || seq.kv.buffers.size() < kv_buffers)
            return fail(ErrorKind::internal, where + ": the host passed sequences that do not cover the rows in order, or too few KV buffers");
        covered += seq.n_rows;
        for (size_t r = seq.first_row; r < covered && r < normed.n; ++r)
            if (ctx.positions[r] < 0 || static_cast<uint64_t>(ctx.positions[r]) >= seq.kv.capacity)
                return fail(ErrorKind::resource, where + ": position " + std::to_string(ctx.positions[r]) +
                                                     " is past the KV cache's " + std::to_string(seq.kv.capacity) + " positions");
    }
    if (covered != normed.n)
        return fail(ErrorKind::internal, where + ": the host's sequences hold " + std::to_string(covered) + " rows of " +
                                             std::to_string(normed.n));
    return {};
}

std::vector<const KvView*> kv_of_rows(BlockKv kv, size_t n_rows) {
    std::vector<const KvView*> rows(n_rows, nullptr);
    for (const SequenceKv& seq : kv)
        for (size_t r = seq.first_row; r < seq.first_row + seq.n_rows && r < n_rows; ++r) rows[r] = &seq.kv;
    return rows;
}

std::vector<KvBufferDecl> gqa_kv_buffers(const GqaShape& shape, int64_t window) {
    const size_t w = window > 0 ? static_cast<size_t>(window) : 0;
    return {KvBufferDecl{"k", shape.kv_width(), w}, KvBufferDecl{"v", shape.kv_width(), w}};
}

namespace {

void add_bias(const Linear& l, size_t n, float* y) {
    const size_t width = l.weight.rows;
    if (l.bias.empty()) return;
    for (size_t r = 0; r < n; ++r)
        for (size_t i = 0; i < width; ++i) y[r * width + i] += l.bias[i];
}

}  // namespace

void linear_into(const Compute& c, const Linear& l, const float* x, size_t n, float* y) {
    matmul(c, l.weight, x, n, y);
    add_bias(l, n, y);
}

void linear_rows(const Compute& c, const Linear& l, const float* x, size_t n, std::vector<float>& y) {
    y.resize(n * l.weight.rows);
    linear_into(c, l, x, n, y.data());
}

void head_norm_rows(const Compute& c, const HeadNorm& norm, float* rows, size_t n_rows, size_t heads, size_t head_dim) {
    std::vector<float> head(head_dim);
    for (size_t at = 0; at < n_rows * heads; ++at) {
        float* x = rows + at * head_dim;
        std::copy_n(x, head_dim, head.data());
        c.table->rmsnorm(head.data(), norm.weight.data(), head_dim, norm.eps, x);
    }
}

int64_t first_visible_key(int64_t position, int64_t window) {
    // transformers' sliding overlay keeps key j for query i iff i - j < window, on top of j <= i.
    if (window <= 0) return 0;
    return std::max<int64_t>(0, position - window + 1);
}

float softmax_with_sink(float* logits, size_t n, float sink, SoftmaxFn softmax) {
    logits[n] = sink;
    softmax(logits, n + 1);
    return logits[n];
}

namespace {

// The visible keys [first, first + n) as runs of rows one after another in KV buffer `buffer` (a
// run ends where a page does, or where a sliding layer's ring wraps): (offset in the run of
// keys, first row, rows). The kernels give each key the bits of a dot or an axpy alone, so where
// the runs break does not change a bit.
struct KeyRun {
    size_t offset;
    const float* rows;
    size_t count;
};
// KvView::at's addressing, walked page by page: a long context has a run every page and this runs
// for every (row, KV head), so it divides once.
void key_runs(const KvView& kv, size_t buffer, size_t first, size_t n, std::vector<KeyRun>& runs) {
    runs.clear();
    const KvBufferView& b = kv.buffers[buffer];
    size_t index = first % b.rows, page = index / b.page_rows, row = index % b.page_rows;
    for (size_t done = 0; done < n;) {
        const size_t count = std::min({n - done, b.page_rows - row, b.rows - index});
        runs.push_back({done, b.pages[page] + b.offset + row * b.width, count});
        done += count;
        index += count;
        row += count;
        if (index == b.rows) index = page = row = 0;
        else if (row == b.page_rows) ++page, row = 0;
    }
}

// A prefill's rows meet each chunk of keys together: the chunk (its K, then its V) is read from
// memory once for the block of rows and from cache by the rest, where row by row a long prompt
// streamed every key and value once per row (40,000 rows of the gpt-oss demo: 27 s, most of it
// waiting on the KV). Rows go into one block only when they read the same sequence's KV.
constexpr size_t kRowBlock = 16;
constexpr size_t kKeyChunk = 256;

// Consecutive rows reading the same KV, at most kRowBlock of them, and few enough a block that
// every thread has blocks (times KV heads) to take: [begin, end) per block.
std::vector<std::pair<size_t, size_t>> row_blocks(const std::vector<const KvView*>& row_kv, size_t kv_heads,
                                                  size_t threads) {
    const size_t n = row_kv.size();
    const size_t spread = std::max<size_t>(1, n * kv_heads / (4 * std::max<size_t>(1, threads)));
    const size_t limit = std::clamp<size_t>(spread, 1, kRowBlock);
    std::vector<std::pair<size_t, size_t>> blocks;
    for (size_t r = 0; r < n;) {
        size_t end = r + 1;
        while (end < n && end - r < limit && row_kv[end] == row_kv[r]) ++end;
        blocks.emplace_back(r, end);
        r = end;
    }
    return blocks;
}

}  // namespace

void attend_causal(const Compute& c, const GqaOptions& o, std::span<const int64_t> positions, const float* q,
                   const std::vector<float>& sinks, BlockKv block_kv, float* context, std::vector<float>* probs,
                   size_t probs_width) {
    const size_t hd = o.shape.head_dim;
    const size_t heads = o.shape.n_heads;
    const size_t kv_heads = o.shape.n_kv_heads;
    const size_t group = heads / kv_heads;
    const size_t q_width = o.shape.q_width(), kv_width = o.shape.kv_width();
    const KernelTable& kt = *c.table;
    const std::vector<const KvView*> row_kv = kv_of_rows(block_kv, positions.size());
    const size_t key_columns = probs != nullptr ? probs_width / heads - 1 : 0;
    const bool with_sinks = !sinks.empty();
    const std::vector<std::pair<size_t, size_t>> blocks = row_blocks(row_kv, kv_heads, c.pool != nullptr ? c.pool->size() : 1);

    // One item is a block of rows and a KV head: each row's group of heads that share it
    // (repeat_kv: head h reads kv head h / group) takes its scores from one pass over the keys
    // and its outputs from one pass over the values, chunk after chunk of keys in ascending
    // order, so each value is the bits of a dot or of the axpys of its row alone.
    auto run = [&](size_t begin, size_t end) {
        std::vector<float> scores;
        std::array<size_t, kRowBlock> first{}, n_keys{}, at{};
        std::vector<KeyRun> runs;
        for (size_t item = begin; item < end; ++item) {
            const auto [r0, r1] = blocks[item / kv_heads];
            const size_t g = item % kv_heads, h0 = g * group, kv_offset = g * hd;
            const KvView& kv = *row_kv[r0];
            size_t lo = SIZE_MAX, hi = 0, total = 0;
            for (size_t r = r0; r < r1; ++r) {
                const size_t i = r - r0;
                first[i] = static_cast<size_t>(first_visible_key(positions[r], o.window));
                n_keys[i] = static_cast<size_t>(positions[r]) + 1 - first[i];
                at[i] = total;
                total += group * (n_keys[i] + 1);  // the sink's logit after the keys'
                lo = std::min(lo, first[i]);
                hi = std::max(hi, first[i] + n_keys[i]);
            }
            scores.resize(total);
            // The keys of [c0, c1) a row sees, as runs in KV buffer `buffer`, and where they start.
            auto visible = [&](size_t i, size_t buffer, size_t c0, size_t c1, size_t& offset) {
                const size_t a = std::max(c0, first[i]), b = std::min(c1, first[i] + n_keys[i]);
                runs.clear();
                if (a >= b) return false;
                key_runs(kv, buffer, a, b - a, runs);
                offset = a - first[i];
                return true;
            };
            for (size_t c0 = lo; c0 < hi; c0 += kKeyChunk)
                for (size_t r = r0; r < r1; ++r) {
                    const size_t i = r - r0;
                    size_t offset = 0;
                    if (!visible(i, 0, c0, c0 + kKeyChunk, offset)) continue;
                    const float* qg = q + r * q_width + h0 * hd;
                    for (const KeyRun& key_run : runs)
                        kt.dot_many(qg, group, hd, key_run.rows + kv_offset, key_run.count, kv_width, hd,
                                    scores.data() + at[i] + offset + key_run.offset, n_keys[i] + 1);
                }
            for (size_t r = r0; r < r1; ++r) {
                const size_t i = r - r0, stride = n_keys[i] + 1;
                for (size_t a = 0; a < group; ++a) {
                    float* s = scores.data() + at[i] + a * stride;
                    for (size_t j = 0; j < n_keys[i]; ++j) s[j] = s[j] * o.scale;
                    float sink_mass = 0.0f;
                    if (with_sinks) sink_mass = softmax_with_sink(s, n_keys[i], sinks[h0 + a], kt.softmax);
                    else kt.softmax(s, n_keys[i]);
                    if (probs != nullptr) {
                        float* p = probs->data() + r * probs_width + (h0 + a) * (key_columns + 1);
                        for (size_t j = 0; j < n_keys[i] && first[i] + j < key_columns; ++j) p[first[i] + j] = s[j];
                        p[key_columns] = sink_mass;
                    }
                }
                std::fill_n(context + r * q_width + h0 * hd, group * hd, 0.0f);
            }
            for (size_t c0 = lo; c0 < hi; c0 += kKeyChunk)
                for (size_t r = r0; r < r1; ++r) {
                    const size_t i = r - r0;
                    size_t offset = 0;
                    if (!visible(i, 1, c0, c0 + kKeyChunk, offset)) continue;
                    float* out = context + r * q_width + h0 * hd;
                    for (const KeyRun& key_run : runs)
                        kt.axpy_many(scores.data() + at[i] + offset + key_run.offset, group, n_keys[i] + 1, key_run.rows + kv_offset,
                                     key_run.count, kv_width, hd, out, hd);
                }
        }
    };
    if (c.pool != nullptr) c.pool->parallel_for(blocks.size() * kv_heads, 1, run);
    else run(0, blocks.size() * kv_heads);
}

Expected<void> build_gqa_attention(const Compute& c, int layer, const StepContext& ctx, const GqaWeights& w,
                                   const GqaOptions& o, const Rows& normed, BlockKv kv, Rows out) {
    STORMO_TRY(check_attention_block(o.who, layer, ctx, normed, kv, 2));
    const size_t n = normed.n;
    const std::span<const int64_t> positions = ctx.positions.first(n);
    const GqaShape& s = o.shape;
    const bool tracing = ctx.tracer != nullptr && ctx.tracer->wants(layer);

    // q, k and v in one call of the pool: they read the same rows.
    std::vector<float> q(n * w.q.weight.rows), k(n * w.k.weight.rows), v(n * w.v.weight.rows);
    const MatmulOut qkv[] = {{w.q.weight, q.data()}, {w.k.weight, k.data()}, {w.v.weight, v.data()}};
    matmul_many(c, qkv, normed.data, n);
    add_bias(w.q, n, q.data());
    add_bias(w.k, n, k.data());
    add_bias(w.v, n, v.data());
    if (!w.q_norm.weight.empty()) head_norm_rows(c, w.q_norm, q.data(), n, s.n_heads, s.head_dim);
    if (!w.k_norm.weight.empty()) head_norm_rows(c, w.k_norm, k.data(), n, s.n_kv_heads, s.head_dim);
    if (o.rope != nullptr) {
        o.rope->apply(positions, q.data(), s.q_width(), s.n_heads, s.head_dim);
        o.rope->apply(positions, k.data(), s.kv_width(), s.n_kv_heads, s.head_dim);
    }
    if (tracing) {
        ctx.tracer->record("attn_in", layer, normed.data, n, normed.width, positions);
        ctx.tracer->record("q_rope", layer, q.data(), n, s.q_width(), positions);
        ctx.tracer->record("k_rope", layer, k.data(), n, s.kv_width(), positions);
    }
    store_kv(kv, positions, k, v, s.kv_width());

    std::vector<float> context(n * s.q_width());
    std::vector<float> probs;
    size_t probs_width = 0;
    if (tracing) {
        // One column per absolute key position up to the block's last row, plus the sink.
        const int64_t last = std::max<int64_t>(positions.empty() ? 0 : positions.back(), 0);
        probs_width = s.n_heads * (static_cast<size_t>(last) + 2);
        probs.assign(n * probs_width, 0.0f);
    }
    attend_causal(c, o, positions, q.data(), w.sinks, kv, context.data(), tracing ? &probs : nullptr, probs_width);

    linear_into(c, w.o, context.data(), n, out.data);
    if (tracing) {
        ctx.tracer->record("attn_probs", layer, probs.data(), n, probs_width, positions);
        ctx.tracer->record("attn_context", layer, context.data(), n, s.q_width(), positions);
        ctx.tracer->record("attn_out", layer, out.data, n, out.width, positions);
    }
    return {};
}

}  // namespace stormo::toolkit
