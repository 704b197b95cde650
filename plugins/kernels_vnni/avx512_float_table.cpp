// Installs the 512-bit float kernels. Baseline code: it only stores function addresses, so it runs
// on any CPU; the plugin calls it only where the CPU has the kernels' features.
#include "isa_avx512_float/avx512_float_kernels.hpp"

namespace stormo::simd::avx512 {

void install_float_kernels(KernelTable& t) {
    constexpr size_t out_in = static_cast<size_t>(Layout::out_in);
    t.matmul[static_cast<size_t>(WeightFormat::F32)][out_in] = matmul_f32_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::BF16)][out_in] = matmul_bf16_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::F16)][out_in] = matmul_f16_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::MXFP4)][out_in] = matmul_mxfp4_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::BF16_PACKED)][out_in] = matmul_bf16_packed_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::FP8_E4M3)][out_in] = matmul_fp8_e4m3_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q8_0)][out_in] = matmul_gguf_q8_0_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q4_0)][out_in] = matmul_gguf_q4_0_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q4_K)][out_in] = matmul_gguf_q4_k_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q5_K)][out_in] = matmul_gguf_q5_k_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q6_K)][out_in] = matmul_gguf_q6_k_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_MXFP4)][out_in] = matmul_gguf_mxfp4_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q4_1)][out_in] = matmul_gguf_q4_1_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q5_0)][out_in] = matmul_gguf_q5_0_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q5_1)][out_in] = matmul_gguf_q5_1_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_IQ4_NL)][out_in] = matmul_gguf_iq4_nl_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_IQ4_XS)][out_in] = matmul_gguf_iq4_xs_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_IQ2_XXS)][out_in] = matmul_gguf_iq2_xxs_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_IQ2_XS)][out_in] = matmul_gguf_iq2_xs_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_IQ2_S)][out_in] = matmul_gguf_iq2_s_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_IQ3_XXS)][out_in] = matmul_gguf_iq3_xxs_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_IQ3_S)][out_in] = matmul_gguf_iq3_s_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_IQ1_S)][out_in] = matmul_gguf_iq1_s_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_IQ1_M)][out_in] = matmul_gguf_iq1_m_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q2_K)][out_in] = matmul_gguf_q2_k_out_in;
    t.matmul[static_cast<size_t>(WeightFormat::GGUF_Q3_K)][out_in] = matmul_gguf_q3_k_out_in;
    t.dot_many = dot_many;
    t.axpy_many = axpy_many;
    t.dot_rows_i8 = dot_rows_i8;
    t.xor_reduce = xor_reduce;
}

}  // namespace stormo::simd::avx512
