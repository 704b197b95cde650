// Installs the float kernels into a kernel table. Plain baseline code: it only stores function
// addresses, so it runs safely on any CPU; the kernels themselves run only once selected.
#include "float_kernels.hpp"

namespace stormo::simd {
namespace {

void set_matmul(KernelTable& t, WeightFormat f, Layout l, MatmulFn fn) {
    t.matmul[static_cast<size_t>(f)][static_cast<size_t>(l)] = fn;
}

}  // namespace

void install_float_kernels(KernelTable& t) {
    set_matmul(t, WeightFormat::F32, Layout::out_in, matmul_f32_out_in);
    set_matmul(t, WeightFormat::BF16, Layout::out_in, matmul_bf16_out_in);
    set_matmul(t, WeightFormat::F16, Layout::out_in, matmul_f16_out_in);
    set_matmul(t, WeightFormat::MXFP4, Layout::out_in, matmul_mxfp4_out_in);
    set_matmul(t, WeightFormat::BF16_PACKED, Layout::out_in, matmul_bf16_packed_out_in);
    set_matmul(t, WeightFormat::FP8_E4M3, Layout::out_in, matmul_fp8_e4m3_out_in);
    set_matmul(t, WeightFormat::GGUF_Q8_0, Layout::out_in, matmul_gguf_q8_0_out_in);
    set_matmul(t, WeightFormat::GGUF_Q4_0, Layout::out_in, matmul_gguf_q4_0_out_in);
    set_matmul(t, WeightFormat::GGUF_Q4_K, Layout::out_in, matmul_gguf_q4_k_out_in);
    set_matmul(t, WeightFormat::GGUF_Q5_K, Layout::out_in, matmul_gguf_q5_k_out_in);
    set_matmul(t, WeightFormat::GGUF_Q6_K, Layout::out_in, matmul_gguf_q6_k_out_in);
    set_matmul(t, WeightFormat::GGUF_MXFP4, Layout::out_in, matmul_gguf_mxfp4_out_in);
    set_matmul(t, WeightFormat::GGUF_Q4_1, Layout::out_in, matmul_gguf_q4_1_out_in);
    set_matmul(t, WeightFormat::GGUF_Q5_0, Layout::out_in, matmul_gguf_q5_0_out_in);
    set_matmul(t, WeightFormat::GGUF_Q5_1, Layout::out_in, matmul_gguf_q5_1_out_in);
    set_matmul(t, WeightFormat::GGUF_Q2_K, Layout::out_in, matmul_gguf_q2_k_out_in);
    set_matmul(t, WeightFormat::GGUF_Q3_K, Layout::out_in, matmul_gguf_q3_k_out_in);
    set_matmul(t, WeightFormat::GGUF_IQ4_NL, Layout::out_in, matmul_gguf_iq4_nl_out_in);
    set_matmul(t, WeightFormat::GGUF_IQ4_XS, Layout::out_in, matmul_gguf_iq4_xs_out_in);
    set_matmul(t, WeightFormat::GGUF_IQ2_XXS, Layout::out_in, matmul_gguf_iq2_xxs_out_in);
    set_matmul(t, WeightFormat::GGUF_IQ2_XS, Layout::out_in, matmul_gguf_iq2_xs_out_in);
    set_matmul(t, WeightFormat::GGUF_IQ2_S, Layout::out_in, matmul_gguf_iq2_s_out_in);
    set_matmul(t, WeightFormat::GGUF_IQ3_XXS, Layout::out_in, matmul_gguf_iq3_xxs_out_in);
    set_matmul(t, WeightFormat::GGUF_IQ3_S, Layout::out_in, matmul_gguf_iq3_s_out_in);
    set_matmul(t, WeightFormat::GGUF_IQ1_S, Layout::out_in, matmul_gguf_iq1_s_out_in);
    set_matmul(t, WeightFormat::GGUF_IQ1_M, Layout::out_in, matmul_gguf_iq1_m_out_in);
    set_matmul(t, WeightFormat::F32, Layout::in_out, matmul_f32_in_out);
    set_matmul(t, WeightFormat::BF16, Layout::in_out, matmul_bf16_in_out);
    set_matmul(t, WeightFormat::F16, Layout::in_out, matmul_f16_in_out);

    // F32 rows stay the reference's memcpy: nothing to decode.
    t.row_to_f32[static_cast<size_t>(WeightFormat::BF16)] = row_bf16;
    t.row_to_f32[static_cast<size_t>(WeightFormat::F16)] = row_f16;
    t.row_to_f32[static_cast<size_t>(WeightFormat::MXFP4)] = row_mxfp4;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q8_0)] = row_gguf_q8_0;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q4_0)] = row_gguf_q4_0;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q4_K)] = row_gguf_q4_k;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q5_K)] = row_gguf_q5_k;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q6_K)] = row_gguf_q6_k;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_MXFP4)] = row_gguf_mxfp4;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q4_1)] = row_gguf_q4_1;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q5_0)] = row_gguf_q5_0;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q5_1)] = row_gguf_q5_1;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q2_K)] = row_gguf_q2_k;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_Q3_K)] = row_gguf_q3_k;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_IQ4_NL)] = row_gguf_iq4_nl;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_IQ4_XS)] = row_gguf_iq4_xs;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_IQ2_XXS)] = row_gguf_iq2_xxs;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_IQ2_XS)] = row_gguf_iq2_xs;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_IQ2_S)] = row_gguf_iq2_s;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_IQ3_XXS)] = row_gguf_iq3_xxs;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_IQ3_S)] = row_gguf_iq3_s;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_IQ1_S)] = row_gguf_iq1_s;
    t.row_to_f32[static_cast<size_t>(WeightFormat::GGUF_IQ1_M)] = row_gguf_iq1_m;

    // silu keeps the reference (one activation vector per token); softmax runs over every visible
    // key of every head, so it gets a vector exp.
    t.rmsnorm = rmsnorm;
    t.softmax = softmax;
    t.dot = dot;
    t.axpy = axpy;
    t.dot_many = dot_many;
    t.axpy_many = axpy_many;
    t.dot_rows_i8 = dot_rows_i8;
    t.xor_reduce = xor_reduce;
    // Not a float kernel, but it needs nothing past AVX2, so both plugins take it from here.
    t.quantize_q8 = quantize_q8;
}

}  // namespace stormo::simd
