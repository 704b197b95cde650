// MLA's weights: the projections with their exact shapes, the per-head views of kv_b_proj the
// absorbed path reads, and the KV plan.
#include <cstddef>

#include "stormo/toolkit/loading.hpp"
#include "stormo/toolkit/mla.hpp"

namespace stormo::toolkit {
namespace {

size_t element_bytes(WeightFormat f) { return f == WeightFormat::F32 ? 4 : 2; }

}  // namespace

WeightView AbsorbedKvB::k_half(size_t head) const {
    const auto* base = static_cast<const std::byte*>(matrix.data) + head * (nope + v) * rank * element_bytes(matrix.format);
    return WeightView{matrix.format, Layout::in_out, base, nullptr, rank, nope};
}

WeightView AbsorbedKvB::v_half(size_t head) const {
    const auto* base =
        static_cast<const std::byte*>(matrix.data) + (head * (nope + v) + nope) * rank * element_bytes(matrix.format);
    return WeightView{matrix.format, Layout::out_in, base, nullptr, v, rank};
}

Expected<void> load_mla(TensorLoader& load, const std::string& module, const MlaShape& s, int64_t hidden,
                        const KernelTable& kt, MlaWeights& w) {
    const auto name = [&](const char* part) { return module + "." + part; };
    const auto heads = static_cast<int64_t>(s.heads), q_rank = static_cast<int64_t>(s.q_lora_rank);
    const auto rank = static_cast<int64_t>(s.kv_lora_rank), rope = static_cast<int64_t>(s.rope);
    const auto qk = static_cast<int64_t>(s.qk()), nope = static_cast<int64_t>(s.nope), v = static_cast<int64_t>(s.v);
    if (q_rank > 0) {
        STORMO_TRY_ASSIGN(w.q_a, load.matrix(name("q_a_proj.weight"), TensorRole::attention, q_rank, hidden));
        STORMO_TRY_ASSIGN(w.q_a_norm, load.vector(name("q_a_layernorm.weight"), TensorRole::norm, q_rank));
        STORMO_TRY_ASSIGN(w.q_b, load.matrix(name("q_b_proj.weight"), TensorRole::attention, heads * qk, q_rank));
    } else {
        STORMO_TRY_ASSIGN(w.q, load.matrix(name("q_proj.weight"), TensorRole::attention, heads * qk, hidden));
    }
    STORMO_TRY_ASSIGN(w.kv_a, load.matrix(name("kv_a_proj_with_mqa.weight"), TensorRole::attention, rank + rope, hidden));
    STORMO_TRY_ASSIGN(w.kv_a_norm, load.vector(name("kv_a_layernorm.weight"), TensorRole::norm, rank));
    // Sliced per head (AbsorbedKvB), so held as stored.
    STORMO_TRY_ASSIGN(w.kv_b, load.matrix_as_stored(name("kv_b_proj.weight"), TensorRole::attention, heads * (nope + v), rank));
    STORMO_TRY_ASSIGN(w.o, load.matrix(name("o_proj.weight"), TensorRole::attention, hidden, heads * v));
    AbsorbedKvB& kvb = w.absorbed;
    kvb.nope = s.nope;
    kvb.v = s.v;
    kvb.rank = s.kv_lora_rank;
    kvb.matrix = w.kv_b;
    if (w.kv_b.format == WeightFormat::FP8_E4M3) {
        kvb.dense.resize(w.kv_b.rows * w.kv_b.cols);
        const RowToF32Fn decode = kt.row_to_f32[static_cast<size_t>(WeightFormat::FP8_E4M3)];
        for (size_t r = 0; r < w.kv_b.rows; ++r) decode(w.kv_b, r, kvb.dense.data() + r * w.kv_b.cols);
        kvb.matrix = WeightView{WeightFormat::F32, Layout::out_in, kvb.dense.data(), nullptr, w.kv_b.rows, w.kv_b.cols};
    }
    return {};
}

std::vector<KvBufferDecl> mla_kv_buffers(const MlaShape& s) {
    return {KvBufferDecl{"latent", s.kv_lora_rank, 0}, KvBufferDecl{"rope_key", s.rope, 0}};
}

}  // namespace stormo::toolkit
