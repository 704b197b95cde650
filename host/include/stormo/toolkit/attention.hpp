#pragma once
// Grouped-query causal attention over the session's KV view, with the options the families need:
// biases on the projections, a per-head norm of q and k before RoPE (Qwen3's QK-norm), a learned
// sink per head that joins the softmax (GPT-OSS), and a sliding window.
//
// Every row reads its keys from the session's cache (the block's own rows are written there
// first), with the same loops in the same order whatever the block size, so a batched prefill and
// token-by-token decode give the same bits. Work is split over (row, head) pairs; each pair's
// result is computed by one thread in one order, so the thread count never changes a bit.
//
// Traced intermediates (when the tracer wants the layer): attn_in, q_rope, k_rope, attn_probs
// (per row and head: one column per absolute key position up to the block's last row, then the
// sink's mass), attn_context, attn_out.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/toolkit/rope.hpp"

namespace stormo::toolkit {

// A linear map y = W x (+ b): the weights in their checkpoint format, the bias widened to float.
struct Linear {
    WeightView weight;
    std::vector<float> bias;  // empty: no bias
};

// RMSNorm applied to each head vector on its own (weight [head_dim]).
struct HeadNorm {
    std::vector<float> weight;
    float eps = 0.0f;
};

struct GqaWeights {
    Linear q, k, v, o;
    std::vector<float> sinks;  // [n_heads]; empty: no sinks
    HeadNorm q_norm, k_norm;   // empty weight: no norm
};

struct GqaShape {
    size_t n_heads = 0;
    size_t n_kv_heads = 0;
    size_t head_dim = 0;
    size_t q_width() const { return n_heads * head_dim; }
    size_t kv_width() const { return n_kv_heads * head_dim; }
};

// The shape config.json gives a GQA layer (num_attention_heads, num_key_value_heads, head_dim),
// from a family's parsed config with those three fields.
template <class Config>
GqaShape gqa_shape(const Config& c) {
    return {static_cast<size_t>(c.n_heads), static_cast<size_t>(c.n_kv_heads), static_cast<size_t>(c.head_dim)};
}

struct GqaOptions {
    GqaShape shape;
    float scale = 1.0f;          // multiplies q.k (transformers: head_dim ** -0.5 unless set)
    int64_t window = 0;          // > 0: a key j is visible from query i iff i - j < window
    const Rope* rope = nullptr;  // applied to the first rope->rotary_dim() values of each head
    std::string who;             // names the family in errors ("gpt_oss")
};

// The KV plan of one GQA layer: "k" and "v" buffers, kv_width floats per position each.
std::vector<KvBufferDecl> gqa_kv_buffers(const GqaShape& shape, int64_t window);

// The whole attention block of one layer: projections, head norms, RoPE, the cache write, the
// causal attention and the output projection into `out`. Buffers 0 and 1 of each sequence's KV
// are K and V. The projections run once over the rows of every sequence of the block; each row
// attends over its own sequence's keys, with the loops it has in a block of its sequence alone.
Expected<void> build_gqa_attention(const Compute& c, int layer, const StepContext& ctx, const GqaWeights& w,
                                   const GqaOptions& o, const Rows& normed, BlockKv kv, Rows out);

// Pieces of the block, for families that assemble their own.

// The host's preconditions for one layer's block: a position per row, sequences that cover the
// rows in order, each with at least `kv_buffers` KV buffers (internal errors), every position
// inside its sequence's cache (a resource error naming it). `who` names the family in the message.
Expected<void> check_attention_block(const std::string& who, int layer, const StepContext& ctx, const Rows& normed,
                                     BlockKv kv, size_t kv_buffers);
// The KV view of each of a block's n_rows rows (its sequence's).
std::vector<const KvView*> kv_of_rows(BlockKv kv, size_t n_rows);

// y[r] = W x[r] + b for every row: y holds n rows of weight.rows floats (linear_rows resizes it).
void linear_into(const Compute& c, const Linear& l, const float* x, size_t n, float* y);
void linear_rows(const Compute& c, const Linear& l, const float* x, size_t n, std::vector<float>& y);
// RMSNorm of every head vector of every row in place (rows of heads * head_dim floats).
void head_norm_rows(const Compute& c, const HeadNorm& norm, float* rows, size_t n_rows, size_t heads, size_t head_dim);
// First key position a query at `position` sees (window 0: the whole causal past).
int64_t first_visible_key(int64_t position, int64_t window);
// The sink joins the softmax as one more logit: logits[n] is set to it, the softmax runs over
// n + 1 (max subtracted first, sink included), the first n entries are the key probabilities and
// the returned value is the sink's mass (it carries no value vector). logits holds n + 1 floats.
float softmax_with_sink(float* logits, size_t n, float sink, SoftmaxFn softmax);
// context[r, h] = sum_j p_j V[j] over the keys row r sees, for every head h, reading K and V
// from buffers 0 and 1 of row r's sequence's KV. sinks: [n_heads] or empty. probs (tracing): see
// the header comment.
void attend_causal(const Compute& c, const GqaOptions& o, std::span<const int64_t> positions, const float* q,
                   const std::vector<float>& sinks, BlockKv kv, float* context, std::vector<float>* probs,
                   size_t probs_width);

}  // namespace stormo::toolkit
