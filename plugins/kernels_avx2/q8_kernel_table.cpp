// Installs the GGUF integer-road kernels into a kernel table. Plain baseline code: it only stores
// function addresses; the kernels themselves run only once selected.
#include "q8_kernels.hpp"

namespace stormo::simd {

void install_q8_gguf_kernels(KernelTable& t) {
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q8_0)] = matmul_q8_gguf_q8_0_avx2;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q4_0)] = matmul_q8_gguf_q4_0_avx2;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_MXFP4)] = matmul_q8_gguf_mxfp4_avx2;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q4_K)] = matmul_q8_gguf_q4_k_avx2;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q5_K)] = matmul_q8_gguf_q5_k_avx2;
    t.matmul_q8[static_cast<size_t>(WeightFormat::GGUF_Q6_K)] = matmul_q8_gguf_q6_k_avx2;
}

}  // namespace stormo::simd
