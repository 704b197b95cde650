#pragma once
// Multi-head latent attention (MLA) as DeepSeek-V2/V3 and GLM-5 write it in transformers:
//   q:  x -> q_a_proj -> RMSNorm (the query latent) -> q_b_proj, or x -> q_proj when the config has
//       no q_lora_rank; per head [nope | rope], RoPE on the rope part
//   kv: x -> kv_a_proj_with_mqa -> [latent | rope key]; RMSNorm(latent); RoPE on the single rope key
//   k, v of a key position: kv_b_proj(latent) -> per head [k_nope | v]; k = [k_nope | rope key]
//   scores over the positions a row attends (all past ones, or a family's sparse choice), times
//   the scale, softmax, sum of v, o_proj.
//
// The session caches per position only the latent and the rope key (KV buffers 0 and 1; a family
// adds its own buffers after them). Attention runs with the weights absorbed, for every block size
// (so batched prefill and token-by-token decode give the same bits): per head the query absorbs
// the K half of kv_b_proj (q_lat = W_kb^T q_nope, so q_nope . k_nope = q_lat . latent), the
// probabilities pool the latents, and the V half of kv_b_proj is applied once to the pooled
// latent. The expanded path (k_nope and v of every key) is the definition transformers writes; it
// runs when the tracer asks for "attn_out_expanded".
//
// Traced intermediates (when the tracer wants the layer): attn_in, q_rope, attn_context, attn_out,
// attn_out_expanded; a selector records its own.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "stormo/family.hpp"
#include "stormo/kernels.hpp"
#include "stormo/toolkit/rope.hpp"

namespace stormo::toolkit {

class TensorLoader;

struct MlaShape {
    size_t heads = 0;
    size_t q_lora_rank = 0;   // 0: a plain q_proj (q_lora_rank null or absent in config.json)
    size_t kv_lora_rank = 0;
    size_t nope = 0;          // qk_nope_head_dim
    size_t rope = 0;          // qk_rope_head_dim
    size_t v = 0;             // v_head_dim
    size_t qk() const { return nope + rope; }
};

// The shape config.json gives an MLA layer (num_attention_heads, q_lora_rank (0: none),
// kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim), from a family's parsed config
// with those fields.
template <class Config>
MlaShape mla_shape(const Config& c) {
    return {static_cast<size_t>(c.n_heads),          static_cast<size_t>(c.q_lora_rank),
            static_cast<size_t>(c.kv_lora_rank),     static_cast<size_t>(c.qk_nope_head_dim),
            static_cast<size_t>(c.qk_rope_head_dim), static_cast<size_t>(c.v_head_dim)};
}

// How the checkpoint orders the rope part of q and of the rope key. split_half: as stored
// (GLM-5, DeepSeek-V2). interleaved: pairs (x0, x1), (x2, x3), ... that transformers first
// gathers into halves (rope_interleave, DeepSeek-V3), so the cache holds the rope key in halves.
enum class MlaRopeLayout { split_half, interleaved };

// kv_b_proj split per head for weight absorption: rows h*(nope+v) .. +nope are head h's K half
// [nope, rank], the next v rows its V half [v, rank]. The K half is read transposed (an in_out
// view: q_lat[rank] = W_kb^T q_nope); an FP8 kv_b_proj is dequantized once into `dense` (F32)
// because the block formats have no in_out kernels.
struct AbsorbedKvB {
    WeightView matrix;              // the whole kv_b_proj (or `dense`), F32/BF16/F16 out_in
    size_t nope = 0, v = 0, rank = 0;
    std::vector<float> dense;       // the dequantized copy, when kv_b_proj is FP8
    WeightView k_half(size_t head) const;
    WeightView v_half(size_t head) const;
};

struct MlaWeights {
    WeightView q_a;                  // [q_lora_rank, hidden]
    std::vector<float> q_a_norm;     // [q_lora_rank]
    WeightView q_b;                  // [heads * qk, q_lora_rank]
    WeightView q;                    // [heads * qk, hidden]: without q_lora_rank only
    WeightView kv_a;                 // [kv_lora_rank + rope, hidden]
    std::vector<float> kv_a_norm;    // [kv_lora_rank]
    WeightView kv_b;                 // [heads * (nope + v), kv_lora_rank], held as stored
    WeightView o;                    // [hidden, heads * v]
    AbsorbedKvB absorbed;            // kv_b sliced per head
};

// The projections of "<module>.q_a_proj.weight", "q_a_layernorm", "q_b_proj" (or "q_proj" when
// shape.q_lora_rank is 0), "kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj", "o_proj", each
// with its exact shape; `kt` dequantizes an FP8 kv_b_proj for the absorbed path.
Expected<void> load_mla(TensorLoader& load, const std::string& module, const MlaShape& shape, int64_t hidden,
                        const KernelTable& kt, MlaWeights& w);

// The KV plan MLA needs on a layer: "latent" (kv_lora_rank) and "rope_key" (rope) floats per position.
std::vector<KvBufferDecl> mla_kv_buffers(const MlaShape& shape);

// Per row of the block, the positions it attends, ascending.
using KeptPositions = std::vector<std::vector<int64_t>>;

// What a sparse selector sees (GLM's DSA indexer): one sequence's rows of the block, their
// query latent [n, q_lora_rank] (empty without q_lora_rank), and that sequence's cache with the
// block's latents and rope keys written. A block of several sequences calls it once per sequence.
struct MlaSelectionInput {
    int layer = 0;
    const StepContext& ctx;
    std::span<const int64_t> positions;
    std::span<const float> q_latent;
    const Rows& normed;
    const KvView& kv;
};
// Chooses the positions each row attends; without one, every row attends all its past positions.
using MlaSelector = std::function<KeptPositions(const MlaSelectionInput&)>;

struct MlaOptions {
    MlaShape shape;
    const Rope* rope = nullptr;      // over shape.rope, for q and the rope key
    MlaRopeLayout rope_layout = MlaRopeLayout::split_half;
    float scale = 1.0f;              // multiplies q.k (transformers: qk_head_dim ** -0.5, DeepSeek's YaRN mscale^2)
    float inner_norm_eps = 1e-6f;    // q_a_layernorm and kv_a_layernorm (their modules' default eps)
    size_t kv_buffers = 2;           // the layer's KV buffers: 0 latent, 1 rope key, then the family's
    std::string who;                 // names the family in errors
};

// The whole attention block of one layer into `out`.
Expected<void> build_mla_attention(const Compute& c, int layer, const StepContext& ctx, const MlaWeights& w,
                                   const MlaOptions& o, const Rows& normed, BlockKv kv, Rows out,
                                   const MlaSelector& select = {});

// Pieces of the block, for tests and families that assemble their own. Both write
// context [rows, heads * v] over the kept positions of each row, in its sequence's KV.
void mla_attend_absorbed(const Compute& c, const MlaShape& shape, std::span<const int64_t> positions,
                         const std::vector<float>& q, const KeptPositions& kept, const AbsorbedKvB& kvb,
                         BlockKv kv, float scale, std::vector<float>& context);
void mla_attend_expanded(const Compute& c, const MlaShape& shape, std::span<const int64_t> positions,
                         const std::vector<float>& q, const KeptPositions& kept, const WeightView& kv_b,
                         BlockKv kv, float scale, std::vector<float>& context);
// Every past position for each row (dense causal attention).
KeptPositions all_past_positions(std::span<const int64_t> positions);
// transformers' rope_interleave gather in place: (x0, x1, x2, x3, ...) -> (x0, x2, ..., x1, x3, ...).
void deinterleave_rope(float* x, size_t dim);

}  // namespace stormo::toolkit
