#pragma once
// The two flavours of VNNI the plugin carries and the choice between them. Baseline code: it
// only compares feature sets and hands out function addresses.
#include "stormo/cpu_features.hpp"
#include "stormo/kernels.hpp"

namespace stormo::simd {

struct VnniVariant {
    const char* name;      // "avx_vnni" or "avx512_vnni"
    const char* features;  // every CPU feature its code needs, comma-separated
    DotI8Fn dot_u8i8;
    DotRowsQ8Fn dot_rows_q8;
    MatmulQ8Fn matmul_q8_mxfp4;
    // GGUF's block formats, by format.
    MatmulQ8Fn gguf_q8_0, gguf_q4_0, gguf_mxfp4, gguf_q4_k, gguf_q5_k, gguf_q6_k;
};

// Stores `v`'s integer-road kernels in `table`.
void install_vnni_variant(const VnniVariant& v, KernelTable& table);

// The variant `cpu` runs: AVX512-VNNI with AVX512VL and AVX512BW when present (its MXFP4 kernel
// holds four blocks a register), else AVX-VNNI; nullptr when neither is usable.
const VnniVariant* pick_vnni_variant(CpuFeatureSet cpu);

// The variant called `name` ("avx_vnni" or "avx512_vnni"), usable on `cpu` or not; nullptr for
// another name.
const VnniVariant* find_vnni_variant(const char* name);

// What the plugin's description publishes on this machine: the usable variant's features, or
// AVX-VNNI's (the smaller requirement) when neither is, so `stormo plugins` names what is missing.
const char* vnni_description_features(CpuFeatureSet cpu);

}  // namespace stormo::simd
