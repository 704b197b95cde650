// Installs the BF16 pair kernels of the integer road. Baseline code: it only stores function
// addresses, so it runs on any CPU; the plugin calls it only where the CPU has the kernels' features.
#include "isa_avx512_bf16/bf16_pair_kernels.hpp"

namespace stormo::simd::avx512 {

void install_bf16_pair_kernels(KernelTable& t) {
    t.matmul_bf16a[static_cast<size_t>(WeightFormat::BF16)] = matmul_bf16_pairs_out_in;
    t.matmul_bf16a[static_cast<size_t>(WeightFormat::BF16_PACKED)] = matmul_bf16_packed_pairs_out_in;
}

}  // namespace stormo::simd::avx512
