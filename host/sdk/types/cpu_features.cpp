// CPU feature detection and kernels-plugin scoring. CPUID says what the core implements; XGETBV
// says whether the OS saves the wide registers on a context switch (XCR0). An AVX instruction on
// a CPU whose OS does not enable the YMM state faults, so AVX-class features count only when XCR0
// has the SSE and AVX bits, and AVX-512 ones only when it also has the opmask and ZMM bits.
// The core library is built for the x86-64 baseline, so XGETBV is issued as inline assembly
// rather than through _xgetbv (which would need -mxsave).
#include <cpuid.h>

#include <array>
#include <cctype>
#include <cstddef>

#include "stormo/cpu_features.hpp"

namespace stormo {
namespace {

constexpr size_t kFeatureCount = static_cast<size_t>(CpuFeature::count);

struct FeatureInfo {
    CpuFeature feature;
    std::string_view name;  // lowercase, as in the enum and in plugin descriptions
    int weight;             // score contribution, after ggml's x86 variant scoring
};

// Weights make a plugin needing more of the machine win when it is usable: VNNI (16) outweighs
// everything AVX2 alone brings (4 + 2 + 1), AVX-512 foundations sit between.
constexpr std::array<FeatureInfo, kFeatureCount> kFeatures{{
    {CpuFeature::sse42, "sse42", 1},
    {CpuFeature::avx, "avx", 2},
    {CpuFeature::avx2, "avx2", 4},
    {CpuFeature::fma, "fma", 2},
    {CpuFeature::f16c, "f16c", 1},
    {CpuFeature::bmi2, "bmi2", 1},
    {CpuFeature::avx512f, "avx512f", 8},
    {CpuFeature::avx512bw, "avx512bw", 8},
    {CpuFeature::avx512vl, "avx512vl", 8},
    {CpuFeature::avx512_vnni, "avx512_vnni", 16},
    {CpuFeature::avx512_bf16, "avx512_bf16", 16},
    {CpuFeature::avx_vnni, "avx_vnni", 16},
}};

const FeatureInfo* info(CpuFeature f) {
    for (const FeatureInfo& i : kFeatures)
        if (i.feature == f) return &i;
    return nullptr;
}

struct Regs {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// Leaf/subleaf query; all zero when the leaf is beyond the CPU's maximum.
Regs cpuid(unsigned leaf, unsigned subleaf) {
    Regs r;
    if (__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx) == 0) return Regs{};
    return r;
}

uint64_t read_xcr0() {
    uint32_t lo = 0;
    uint32_t hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0u));
    return (static_cast<uint64_t>(hi) << 32) | lo;
}

constexpr bool bit(unsigned reg, unsigned n) { return ((reg >> n) & 1u) != 0; }

// XCR0 state components.
constexpr uint64_t kXcr0Sse = 1u << 1;
constexpr uint64_t kXcr0Avx = 1u << 2;
constexpr uint64_t kXcr0Opmask = 1u << 5;
constexpr uint64_t kXcr0ZmmHi256 = 1u << 6;
constexpr uint64_t kXcr0Hi16Zmm = 1u << 7;

}  // namespace

std::string_view cpu_feature_name(CpuFeature f) {
    const FeatureInfo* i = info(f);
    return i ? i->name : std::string_view("unknown");
}

// Exact lowercase names; uppercase letters are accepted too ("AVX2" in a YAML file).
bool cpu_feature_from_name(std::string_view name, CpuFeature& out) {
    for (const FeatureInfo& i : kFeatures) {
        if (i.name.size() != name.size()) continue;
        bool same = true;
        for (size_t k = 0; k < name.size() && same; ++k)
            same = std::tolower(static_cast<unsigned char>(name[k])) == i.name[k];
        if (same) {
            out = i.feature;
            return true;
        }
    }
    return false;
}

CpuFeatureSet detect_cpu_features() {
    CpuFeatureSet set;
    const Regs leaf1 = cpuid(1, 0);
    const Regs leaf7 = cpuid(7, 0);
    const Regs leaf7_1 = leaf7.eax >= 1 ? cpuid(7, 1) : Regs{};

    if (bit(leaf1.ecx, 20)) set.add(CpuFeature::sse42);
    if (bit(leaf7.ebx, 8)) set.add(CpuFeature::bmi2);  // scalar: no register state needed

    const bool osxsave = bit(leaf1.ecx, 27);
    const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    const bool ymm_state = (xcr0 & (kXcr0Sse | kXcr0Avx)) == (kXcr0Sse | kXcr0Avx);
    const uint64_t zmm_bits = kXcr0Opmask | kXcr0ZmmHi256 | kXcr0Hi16Zmm;
    const bool zmm_state = ymm_state && (xcr0 & zmm_bits) == zmm_bits;

    if (ymm_state) {
        if (bit(leaf1.ecx, 28)) set.add(CpuFeature::avx);
        if (bit(leaf1.ecx, 12)) set.add(CpuFeature::fma);
        if (bit(leaf1.ecx, 29)) set.add(CpuFeature::f16c);
        if (bit(leaf7.ebx, 5)) set.add(CpuFeature::avx2);
        if (bit(leaf7_1.eax, 4)) set.add(CpuFeature::avx_vnni);
    }
    if (zmm_state) {
        if (bit(leaf7.ebx, 16)) set.add(CpuFeature::avx512f);
        if (bit(leaf7.ebx, 30)) set.add(CpuFeature::avx512bw);
        if (bit(leaf7.ebx, 31)) set.add(CpuFeature::avx512vl);
        if (bit(leaf7.ecx, 11)) set.add(CpuFeature::avx512_vnni);
        if (bit(leaf7_1.eax, 5)) set.add(CpuFeature::avx512_bf16);
    }
    return set;
}

int score_cpu_features(const std::vector<CpuFeature>& required, CpuFeatureSet available) {
    int score = 1;
    for (CpuFeature f : required) {
        const FeatureInfo* i = info(f);
        if (i == nullptr || !available.has(f)) return 0;
        score += i->weight;
    }
    return score;
}

std::vector<CpuFeature> missing_cpu_features(const std::vector<CpuFeature>& required,
                                             CpuFeatureSet available) {
    std::vector<CpuFeature> missing;
    for (CpuFeature f : required)
        if (info(f) == nullptr || !available.has(f)) missing.push_back(f);
    return missing;
}

}  // namespace stormo
