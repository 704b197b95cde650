// The reference kernel table: every entry filled by the scalar definition. MXFP4 and the GGUF
// block formats exist only as out_in (blocks run along a row's inputs), so its in_out entry stays empty: no loader builds
// such a view, and stormo::matmul names the gap if one ever reaches it.
#include "reference_kernels/reference.hpp"
#include "stormo/kernels.hpp"

namespace stormo {
namespace {

constexpr size_t idx(WeightFormat f) { return static_cast<size_t>(f); }
constexpr size_t idx(Layout l) { return static_cast<size_t>(l); }

// ggml's block layouts (the formats with a GGUF block): out_in only, like MXFP4 (blocks run along
// a row's inputs).
bool is_gguf_block(WeightFormat f) { return gguf_weight_block(f).values != 0; }

KernelTable make_reference_table() {
    KernelTable t;
    auto set = [&t](WeightFormat f, Layout l, MatmulFn fn) { t.matmul[idx(f)][idx(l)] = fn; };
    set(WeightFormat::F32, Layout::out_in, reference::matmul_f32_out_in);
    set(WeightFormat::BF16, Layout::out_in, reference::matmul_bf16_out_in);
    set(WeightFormat::F16, Layout::out_in, reference::matmul_f16_out_in);
    set(WeightFormat::MXFP4, Layout::out_in, reference::matmul_mxfp4_out_in);
    set(WeightFormat::FP8_E4M3, Layout::out_in, reference::matmul_fp8_e4m3_out_in);
    set(WeightFormat::BF16_PACKED, Layout::out_in, reference::matmul_bf16_packed_out_in);
    for (size_t f = 0; f < kWeightFormatCount; ++f)
        if (is_gguf_block(static_cast<WeightFormat>(f))) t.matmul[f][idx(Layout::out_in)] = reference::matmul_gguf_out_in;
    set(WeightFormat::F32, Layout::in_out, reference::matmul_f32_in_out);
    set(WeightFormat::BF16, Layout::in_out, reference::matmul_bf16_in_out);
    set(WeightFormat::F16, Layout::in_out, reference::matmul_f16_in_out);

    t.row_to_f32[idx(WeightFormat::F32)] = reference::row_f32;
    t.row_to_f32[idx(WeightFormat::BF16)] = reference::row_bf16;
    t.row_to_f32[idx(WeightFormat::F16)] = reference::row_f16;
    t.row_to_f32[idx(WeightFormat::MXFP4)] = reference::row_mxfp4;
    t.row_to_f32[idx(WeightFormat::FP8_E4M3)] = reference::row_fp8_e4m3;
    t.row_to_f32[idx(WeightFormat::BF16_PACKED)] = reference::row_bf16_packed;
    for (size_t f = 0; f < kWeightFormatCount; ++f)
        if (is_gguf_block(static_cast<WeightFormat>(f))) t.row_to_f32[f] = reference::row_gguf;

    t.rmsnorm = reference::rmsnorm;
    t.softmax = reference::softmax;
    t.dot = reference::dot;
    t.axpy = reference::axpy;
    t.dot_many = reference::dot_many;
    t.axpy_many = reference::axpy_many;
    t.silu = reference::silu;
    t.dot_u8i8 = reference::dot_u8i8;
    // The integer road exists for the block formats only: BF16/F16/F32 weights stay on the float road (their
    // values are not small integers; quantizing them would change the weights, not the road).
    t.matmul_q8[idx(WeightFormat::MXFP4)] = reference::matmul_q8_mxfp4_out_in;
    // GGUF's block formats hold small integers and block scales too, so they get the road as well.
    t.matmul_q8[idx(WeightFormat::GGUF_Q8_0)] = reference::matmul_q8_gguf_q8_0;
    t.matmul_q8[idx(WeightFormat::GGUF_Q4_0)] = reference::matmul_q8_gguf_q4_0;
    t.matmul_q8[idx(WeightFormat::GGUF_Q4_K)] = reference::matmul_q8_gguf_q4_k;
    t.matmul_q8[idx(WeightFormat::GGUF_Q5_K)] = reference::matmul_q8_gguf_q5_k;
    t.matmul_q8[idx(WeightFormat::GGUF_Q6_K)] = reference::matmul_q8_gguf_q6_k;
    t.matmul_q8[idx(WeightFormat::GGUF_MXFP4)] = reference::matmul_q8_gguf_mxfp4;
    // BF16 activations on the integer road: the definition, which stormo::matmul never runs itself
    // (a scalar pass would cost a plugin without the road far more than the float road).
    t.matmul_bf16a[idx(WeightFormat::BF16)] = reference::matmul_bf16_pairs_out_in;
    t.matmul_bf16a[idx(WeightFormat::BF16_PACKED)] = reference::matmul_bf16_pairs_out_in;
    t.dot_rows_i8 = reference::dot_rows_i8;
    t.xor_reduce = reference::xor_reduce;
    t.dot_rows_q8 = reference::dot_rows_q8;
    t.quantize_q8 = quantize_q8;
    return t;
}

}  // namespace

const KernelTable& reference_kernels() {
    static const KernelTable table = make_reference_table();
    return table;
}

}  // namespace stormo
