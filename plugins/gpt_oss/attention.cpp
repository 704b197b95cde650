// GPT-OSS attention: GQA with biases, split-half YaRN RoPE, a learned sink per head that joins the
// softmax and takes probability mass, and sliding-window or full causal visibility per layer.
//
// Every row reads its keys from the session's cache (this block's rows are written there first),
// with the same loops in the same order whatever the block size, so a batched prefill and
// token-by-token decode give the same bits.
#include <algorithm>
#include <limits>

#include "attention_math.hpp"
#include "gpt_oss_model.hpp"
#include "yarn_rope.hpp"

namespace stormo::gpt_oss {
namespace {

void add_bias(std::vector<float>& rows, size_t width, const std::vector<float>& bias) {
    if (bias.empty()) return;
    for (size_t at = 0; at < rows.size(); at += width)
        for (size_t i = 0; i < width; ++i) rows[at + i] += bias[i];
}

bool position_fits(int64_t position, size_t capacity) {
    return position >= 0 && static_cast<uint64_t>(position) < capacity;
}

}  // namespace

void GptOssModel::project_qkv(const AttentionWeights& w, const Rows& normed, std::vector<float>& q,
                              std::vector<float>& k, std::vector<float>& v) const {
    const size_t n = normed.n;
    q.resize(n * cfg_.q_width());
    k.resize(n * cfg_.kv_width());
    v.resize(n * cfg_.kv_width());
    matmul(compute_, w.q, normed.data, n, q.data());
    matmul(compute_, w.k, normed.data, n, k.data());
    matmul(compute_, w.v, normed.data, n, v.data());
    add_bias(q, cfg_.q_width(), w.q_bias);
    add_bias(k, cfg_.kv_width(), w.k_bias);
    add_bias(v, cfg_.kv_width(), w.v_bias);
}

void GptOssModel::apply_rope(std::span<const int64_t> positions, std::vector<float>& q, std::vector<float>& k) const {
    const size_t hd = static_cast<size_t>(cfg_.head_dim);
    const size_t q_heads = static_cast<size_t>(cfg_.n_heads), kv_heads = static_cast<size_t>(cfg_.n_kv_heads);
    std::vector<float> cos(hd / 2), sin(hd / 2);
    const size_t n = q.size() / cfg_.q_width();
    for (size_t r = 0; r < n; ++r) {
        rope_cos_sin(inv_freq_, rope_scaling_, positions[r], cos.data(), sin.data());
        for (size_t h = 0; h < q_heads; ++h)
            rope_apply_split_half(q.data() + r * cfg_.q_width() + h * hd, cos.data(), sin.data(), hd);
        for (size_t h = 0; h < kv_heads; ++h)
            rope_apply_split_half(k.data() + r * cfg_.kv_width() + h * hd, cos.data(), sin.data(), hd);
    }
}

// context[r, h*hd .. (h+1)*hd) = sum_j p_j V[j] over the keys row r sees, for every head h.
// probs (tracing only): row r, head h, column c < key_columns = probability of the key at absolute
// position c (0 when not visible); column key_columns = the sink's mass.
void GptOssModel::attend_rows(int layer, std::span<const int64_t> positions, const std::vector<float>& q,
                              const KvView& kv, std::vector<float>& context, std::vector<float>* probs,
                              size_t probs_width) const {
    const size_t hd = static_cast<size_t>(cfg_.head_dim);
    const size_t heads = static_cast<size_t>(cfg_.n_heads);
    const size_t group = heads / static_cast<size_t>(cfg_.n_kv_heads);
    const size_t q_width = cfg_.q_width(), kv_width = cfg_.kv_width();
    const size_t n = positions.size();
    const bool sliding = cfg_.layer_types[static_cast<size_t>(layer)] == AttentionKind::sliding;
    const int64_t window = sliding ? cfg_.sliding_window : 0;
    const std::vector<float>& sinks = layers_[static_cast<size_t>(layer)].attn.sinks;
    const KernelTable& kt = *compute_.table;
    const float* keys = kv.buffers[0];
    const float* values = kv.buffers[1];
    const size_t key_columns = probs != nullptr ? probs_width / heads - 1 : 0;

    auto run = [&](size_t begin, size_t end) {
        std::vector<float> scores;
        for (size_t item = begin; item < end; ++item) {
            const size_t r = item / heads, h = item % heads;
            float* out = context.data() + r * q_width + h * hd;
            const int64_t pos = positions[r];  // attention() checked it fits the cache
            const size_t first = static_cast<size_t>(first_visible_key(pos, window));
            const size_t n_keys = static_cast<size_t>(pos) + 1 - first;
            const size_t kv_offset = (h / group) * hd;  // repeat_kv: head h reads kv head h / group
            const float* qh = q.data() + r * q_width + h * hd;
            scores.resize(n_keys + 1);
            for (size_t j = 0; j < n_keys; ++j)
                scores[j] = kt.dot(qh, keys + kv.row(0, static_cast<int64_t>(first + j)) * kv_width + kv_offset, hd) *
                            attention_scale_;
            const float sink_mass = softmax_with_sink(scores.data(), n_keys, sinks[h], kt.softmax);
            std::fill_n(out, hd, 0.0f);
            for (size_t j = 0; j < n_keys; ++j)
                kt.axpy(scores[j], values + kv.row(1, static_cast<int64_t>(first + j)) * kv_width + kv_offset, out, hd);
            if (probs != nullptr) {
                float* p = probs->data() + r * probs_width + h * (key_columns + 1);
                for (size_t j = 0; j < n_keys && first + j < key_columns; ++j) p[first + j] = scores[j];
                p[key_columns] = sink_mass;
            }
        }
    };
    if (compute_.pool != nullptr) compute_.pool->parallel_for(n * heads, 1, run);
    else run(0, n * heads);
}

Expected<void> GptOssModel::attention(int layer, const StepContext& ctx, const Rows& normed, KvView kv, Rows out) const {
    const size_t n = normed.n;
    if (ctx.positions.size() < n || kv.buffers.size() < 2 || kv.rows.size() < 2)
        return fail(ErrorKind::internal, "gpt_oss attention, layer " + std::to_string(layer) +
                                             ": the host passed fewer positions or KV buffers than rows");
    for (size_t r = 0; r < n; ++r)
        if (!position_fits(ctx.positions[r], kv.capacity))
            return fail(ErrorKind::resource, "gpt_oss attention, layer " + std::to_string(layer) + ": position " +
                                                 std::to_string(ctx.positions[r]) + " is past the KV cache's " +
                                                 std::to_string(kv.capacity) + " positions");
    const std::span<const int64_t> positions = ctx.positions.first(n);
    const LayerWeights& w = layers_.at(static_cast<size_t>(layer));
    const size_t kv_width = cfg_.kv_width();
    const bool tracing = ctx.tracer != nullptr && ctx.tracer->wants(layer);

    std::vector<float> q, k, v;
    project_qkv(w.attn, normed, q, k, v);
    apply_rope(positions, q, k);
    if (tracing) {
        ctx.tracer->record("attn_in", layer, normed.data, n, normed.width, positions);
        ctx.tracer->record("q_rope", layer, q.data(), n, cfg_.q_width(), positions);
        ctx.tracer->record("k_rope", layer, k.data(), n, kv_width, positions);
    }

    // This block's keys and values go into the cache at their positions (never past capacity).
    for (size_t r = 0; r < n; ++r) {
        std::copy_n(k.data() + r * kv_width, kv_width, kv.buffers[0] + kv.row(0, positions[r]) * kv_width);
        std::copy_n(v.data() + r * kv_width, kv_width, kv.buffers[1] + kv.row(1, positions[r]) * kv_width);
    }

    std::vector<float> context(n * cfg_.q_width());
    std::vector<float> probs;
    size_t probs_width = 0;
    if (tracing) {
        // One column per absolute key position up to the block's last row, plus the sink.
        const int64_t last = std::max<int64_t>(positions.empty() ? 0 : positions.back(), 0);
        probs_width = static_cast<size_t>(cfg_.n_heads) * (static_cast<size_t>(last) + 2);
        probs.assign(n * probs_width, 0.0f);
    }
    attend_rows(layer, positions, q, kv, context, tracing ? &probs : nullptr, probs_width);

    matmul(compute_, w.attn.o, context.data(), n, out.data);
    if (!w.attn.o_bias.empty())
        for (size_t r = 0; r < n; ++r)
            for (size_t i = 0; i < out.width; ++i) out.row(r)[i] += w.attn.o_bias[i];

    if (tracing) {
        ctx.tracer->record("attn_probs", layer, probs.data(), n, probs_width, positions);
        ctx.tracer->record("attn_context", layer, context.data(), n, cfg_.q_width(), positions);
        ctx.tracer->record("attn_out", layer, out.data, n, out.width, positions);
    }
    return {};
}

}  // namespace stormo::gpt_oss
