// Multi-head latent attention: the block (projections, cache write, the family's selection, the
// absorbed attention, o_proj) and its two attention paths. See mla.hpp for the math.
#include "stormo/toolkit/mla.hpp"

#include <algorithm>
#include <numeric>

#include "stormo/toolkit/attention.hpp"

namespace stormo::toolkit {

void deinterleave_rope(float* x, size_t dim) {
    std::vector<float> pairs(x, x + dim);
    for (size_t i = 0; i < dim / 2; ++i) {
        x[i] = pairs[2 * i];
        x[dim / 2 + i] = pairs[2 * i + 1];
    }
}

KeptPositions all_past_positions(std::span<const int64_t> positions) {
    KeptPositions kept(positions.size());
    for (size_t r = 0; r < positions.size(); ++r) {
        kept[r].resize(static_cast<size_t>(positions[r]) + 1);
        std::iota(kept[r].begin(), kept[r].end(), int64_t{0});
    }
    return kept;
}

Expected<void> build_mla_attention(const Compute& c, int layer, const StepContext& ctx, const MlaWeights& w,
                                   const MlaOptions& o, const Rows& normed, BlockKv kv, Rows out,
                                   const MlaSelector& select) {
    STORMO_TRY(check_attention_block(o.who, layer, ctx, normed, kv, o.kv_buffers));
    const size_t n = normed.n;
    const std::span<const int64_t> positions = ctx.positions.first(n);
    const KernelTable& kt = *c.table;
    const MlaShape& s = o.shape;
    const size_t heads = s.heads, nope = s.nope, rope = s.rope, qkd = s.qk(), vd = s.v, rank = s.kv_lora_rank;
    const size_t q_rank = s.q_lora_rank;
    const bool interleaved = o.rope_layout == MlaRopeLayout::interleaved;
    const bool tracing = ctx.tracer != nullptr && ctx.tracer->wants(layer);

    // Queries: the low-rank path (or q_proj), then RoPE on each head's rope part (after its nope
    // part). The first projection and kv_a read the same rows: one call of the pool for both.
    std::vector<float> q_a(n * q_rank), q_latent(n * q_rank), q(n * heads * qkd), compressed(n * (rank + rope));
    if (q_rank > 0) {
        const MatmulOut down_projections[] = {{w.q_a, q_a.data()}, {w.kv_a, compressed.data()}};
        matmul_many(c, down_projections, normed.data, n);
        for (size_t r = 0; r < n; ++r)
            kt.rmsnorm(q_a.data() + r * q_rank, w.q_a_norm.data(), q_rank, o.inner_norm_eps, q_latent.data() + r * q_rank);
        matmul(c, w.q_b, q_latent.data(), n, q.data());
    } else {
        const MatmulOut projections[] = {{w.q, q.data()}, {w.kv_a, compressed.data()}};
        matmul_many(c, projections, normed.data, n);
    }
    if (interleaved)
        for (size_t i = 0; i < n * heads; ++i) deinterleave_rope(q.data() + i * qkd + nope, rope);
    o.rope->apply(positions, q.data(), heads * qkd, heads, qkd, nope);

    // This block's latents and rope keys, into each sequence's cache at their positions.
    const std::vector<const KvView*> row_kv = kv_of_rows(kv, n);
    std::vector<float> rope_keys(n * rope);
    for (size_t r = 0; r < n; ++r) {
        const float* row = compressed.data() + r * (rank + rope);
        kt.rmsnorm(row, w.kv_a_norm.data(), rank, o.inner_norm_eps,
                   row_kv[r]->at(0, positions[r]));
        std::copy_n(row + rank, rope, rope_keys.data() + r * rope);
        if (interleaved) deinterleave_rope(rope_keys.data() + r * rope, rope);
    }
    o.rope->apply(positions, rope_keys.data(), rope, 1, rope);
    for (size_t r = 0; r < n; ++r)
        std::copy_n(rope_keys.data() + r * rope, rope, row_kv[r]->at(1, positions[r]));

    // Which past positions each row attends to: a selector sees one sequence at a time, as it
    // would in a block of that sequence alone.
    KeptPositions kept(n);
    for (const SequenceKv& seq : kv) {
        const size_t first = seq.first_row, count = seq.n_rows;
        const std::span<const int64_t> seq_positions = positions.subspan(first, count);
        KeptPositions part;
        if (select) {
            const std::span<const float> seq_latent =
                q_rank > 0 ? std::span<const float>(q_latent).subspan(first * q_rank, count * q_rank) : std::span<const float>();
            const Rows seq_normed{normed.row(first), count, normed.width};
            part = select(MlaSelectionInput{layer, ctx, seq_positions, seq_latent, seq_normed, seq.kv});
        } else {
            part = all_past_positions(seq_positions);
        }
        for (size_t i = 0; i < count; ++i) kept[first + i] = std::move(part[i]);
    }

    std::vector<float> context(n * heads * vd);
    mla_attend_absorbed(c, s, positions, q, kept, w.absorbed, kv, o.scale, context);
    matmul(c, w.o, context.data(), n, out.data);
    if (tracing) {
        ctx.tracer->record("attn_in", layer, normed.data, n, normed.width, positions);
        ctx.tracer->record("q_rope", layer, q.data(), n, heads * qkd, positions);
        ctx.tracer->record("attn_context", layer, context.data(), n, heads * vd, positions);
        ctx.tracer->record("attn_out", layer, out.data, n, out.width, positions);
        std::vector<float> expanded_context(n * heads * vd), expanded_out(n * out.width);
        mla_attend_expanded(c, s, positions, q, kept, w.kv_b, kv, o.scale, expanded_context);
        matmul(c, w.o, expanded_context.data(), n, expanded_out.data());
        ctx.tracer->record("attn_out_expanded", layer, expanded_out.data(), n, out.width, positions);
    }
    return {};
}

namespace {

// A stretch of a row's kept positions whose latents and rope keys lie one after another in their
// pages: keys [first, first + count) of the row's list, from position `position` on.
struct KeptRun {
    size_t first;
    size_t count;
    int64_t position;
};

// The kept positions in their order, cut where a position is not the previous one's successor or
// a page ends. The kernels give each key the bits of a dot or an axpy alone, so where the runs
// break does not change a bit.
void kept_runs(const KvView& kv, const std::vector<int64_t>& keys, std::vector<KeptRun>& runs) {
    runs.clear();
    for (size_t j = 0; j < keys.size();) {
        const size_t room = std::min(kv.run(0, keys[j]), kv.run(1, keys[j]));
        size_t count = 1;
        while (j + count < keys.size() && count < room && keys[j + count] == keys[j] + static_cast<int64_t>(count)) ++count;
        runs.push_back({j, count, keys[j]});
        j += count;
    }
}

}  // namespace

// Per (row, head): q_lat = W_kb[h]^T q_nope; score_t = (q_lat . latent_t + q_pe . rope_key_t) *
// scale over the kept positions; softmax; pooled = sum_t p_t latent_t; context = W_vb[h] pooled.
// Each run of kept positions is read by one call of the table's dot_many and axpy_many (the bits
// of dot and axpy per key): with a call per key and head, those calls and their short sums took
// about half of a decode-heavy run's samples on the DeepSeek-V3 demo (perf); 1.63x its decode
// at a 2,000-token context, the GLM demo (its indexer keeps 8 scattered positions) unchanged.
// Items of a whole row's heads, which would read each run once for all heads, made the GLM demo
// 28% slower and were left (one thread, 2026-12-05, not understood).
void mla_attend_absorbed(const Compute& c, const MlaShape& s, std::span<const int64_t> positions,
                         const std::vector<float>& q, const KeptPositions& kept, const AbsorbedKvB& kvb,
                         BlockKv block_kv, float scale, std::vector<float>& context) {
    const KernelTable& kt = *c.table;
    const size_t n = positions.size(), heads = s.heads, nope = s.nope, rope = s.rope;
    const size_t qkd = s.qk(), vd = s.v, rank = s.kv_lora_rank;
    const Compute inline_compute{c.table, nullptr, c.int8_activations};  // already split by (row, head)
    const std::vector<const KvView*> row_kv = kv_of_rows(block_kv, n);
    auto run = [&](size_t begin, size_t end) {
        std::vector<float> q_lat(rank), pooled(rank), scores, rope_scores;
        std::vector<KeptRun> runs;
        for (size_t item = begin; item < end; ++item) {
            const size_t r = item / heads, h = item % heads;
            const KvView& kv = *row_kv[r];
            const std::vector<int64_t>& keys = kept[r];
            const size_t latent_stride = kv.buffers[0].width, rope_stride = kv.buffers[1].width;
            const float* qh = q.data() + (r * heads + h) * qkd;
            matmul(inline_compute, kvb.k_half(h), qh, 1, q_lat.data());
            kept_runs(kv, keys, runs);
            scores.resize(keys.size());
            rope_scores.resize(keys.size());
            for (const KeptRun& k : runs) {
                kt.dot_many(q_lat.data(), 1, rank, kv.at(0, k.position), k.count, latent_stride, rank, scores.data() + k.first, 0);
                kt.dot_many(qh + nope, 1, rope, kv.at(1, k.position), k.count, rope_stride, rope, rope_scores.data() + k.first, 0);
            }
            for (size_t j = 0; j < keys.size(); ++j) scores[j] = (scores[j] + rope_scores[j]) * scale;
            kt.softmax(scores.data(), scores.size());
            std::fill(pooled.begin(), pooled.end(), 0.0f);
            for (const KeptRun& k : runs)
                kt.axpy_many(scores.data() + k.first, 1, 0, kv.at(0, k.position), k.count, latent_stride, rank, pooled.data(), 0);
            matmul(inline_compute, kvb.v_half(h), pooled.data(), 1, context.data() + (r * heads + h) * vd);
        }
    };
    if (c.pool != nullptr) c.pool->parallel_for(n * heads, 1, run);
    else run(0, n * heads);
}

// transformers' order: k_nope and v of every position up to the sequence's last row expanded
// through kv_b_proj, k = [k_nope | rope key], softmax(q . k * scale) over the kept positions, sum
// of v; one sequence at a time.
void mla_attend_expanded(const Compute& c, const MlaShape& s, std::span<const int64_t> positions,
                         const std::vector<float>& q, const KeptPositions& kept, const WeightView& kv_b,
                         BlockKv block_kv, float scale, std::vector<float>& context) {
    const KernelTable& kt = *c.table;
    const size_t heads = s.heads, nope = s.nope, rope = s.rope;
    const size_t qkd = s.qk(), vd = s.v, rank = s.kv_lora_rank;
    for (const SequenceKv& seq : block_kv) {
        if (seq.n_rows == 0) continue;
        const KvView& kv = seq.kv;
        const size_t span = static_cast<size_t>(positions[seq.first_row + seq.n_rows - 1]) + 1;
        std::vector<float> latents(span * rank), expanded(span * heads * (nope + vd));
        for (size_t t = 0; t < span; ++t)
            std::copy_n(kv.at(0, static_cast<int64_t>(t)), rank, latents.data() + t * rank);
        matmul(c, kv_b, latents.data(), span, expanded.data());
        std::vector<float> key(qkd), scores;
        for (size_t r = seq.first_row; r < seq.first_row + seq.n_rows; ++r)
            for (size_t h = 0; h < heads; ++h) {
                const std::vector<int64_t>& keys = kept[r];
                const float* qh = q.data() + (r * heads + h) * qkd;
                scores.resize(keys.size());
                for (size_t j = 0; j < keys.size(); ++j) {
                    const size_t t = static_cast<size_t>(keys[j]);
                    std::copy_n(expanded.data() + (t * heads + h) * (nope + vd), nope, key.data());
                    std::copy_n(kv.at(1, keys[j]), rope, key.data() + nope);
                    scores[j] = kt.dot(qh, key.data(), qkd) * scale;
                }
                kt.softmax(scores.data(), scores.size());
                float* ctx_h = context.data() + (r * heads + h) * vd;
                std::fill_n(ctx_h, vd, 0.0f);
                for (size_t j = 0; j < keys.size(); ++j)
                    kt.axpy(scores[j], expanded.data() + (static_cast<size_t>(keys[j]) * heads + h) * (nope + vd) + nope, ctx_h, vd);
            }
    }
}

}  // namespace stormo::toolkit
