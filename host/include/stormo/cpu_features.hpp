#pragma once
// x86 features a kernels plugin may need; the host checks each with CPUID and, for the wide
// registers, XGETBV (the OS must save them), then scores a plugin additively.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/export.hpp"

namespace stormo {

enum class CpuFeature : uint32_t {
    sse42, avx, avx2, fma, f16c, bmi2,
    avx512f, avx512bw, avx512vl, avx512_vnni, avx512_bf16, avx_vnni,
    count
};

STORMO_API std::string_view cpu_feature_name(CpuFeature f);
STORMO_API bool cpu_feature_from_name(std::string_view name, CpuFeature& out);

struct CpuFeatureSet {
    uint64_t bits = 0;
    bool has(CpuFeature f) const { return bits & (uint64_t{1} << static_cast<uint32_t>(f)); }
    void add(CpuFeature f) { bits |= uint64_t{1} << static_cast<uint32_t>(f); }
};

// What this CPU and OS support (CPUID + XGETBV).
STORMO_API CpuFeatureSet detect_cpu_features();
// 0 when any required feature is missing, else 1 + the sum of the features' weights, so a plugin
// built for more capable hardware wins when it is usable.
STORMO_API int score_cpu_features(const std::vector<CpuFeature>& required, CpuFeatureSet available);
STORMO_API std::vector<CpuFeature> missing_cpu_features(const std::vector<CpuFeature>& required,
                                                        CpuFeatureSet available);

}  // namespace stormo
