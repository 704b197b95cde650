// CPU feature detection (CPUID + XGETBV) against the kernel's own view in /proc/cpuinfo, the
// names, and the additive scoring that ranks kernels plugins.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "stormo/cpu_features.hpp"

namespace stormo {
namespace {

constexpr CpuFeature kAll[] = {CpuFeature::sse42,       CpuFeature::avx,         CpuFeature::avx2,
                               CpuFeature::fma,         CpuFeature::f16c,        CpuFeature::bmi2,
                               CpuFeature::avx512f,     CpuFeature::avx512bw,    CpuFeature::avx512vl,
                               CpuFeature::avx512_vnni, CpuFeature::avx512_bf16, CpuFeature::avx_vnni};

// The flags of the first processor in /proc/cpuinfo; empty when the file is unavailable.
std::set<std::string> cpuinfo_flags() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("flags", 0) != 0) continue;
        std::istringstream words(line.substr(line.find(':') + 1));
        std::set<std::string> flags;
        for (std::string w; words >> w;) flags.insert(w);
        return flags;
    }
    return {};
}

// Linux names features as we do, except SSE4.2; it also clears AVX-class flags when the OS does
// not enable their register state, as our XGETBV check does.
std::string linux_name(CpuFeature f) {
    if (f == CpuFeature::sse42) return "sse4_2";
    return std::string(cpu_feature_name(f));
}

TEST(CpuFeatures, DetectionAgreesWithProcCpuinfo) {
    const std::set<std::string> flags = cpuinfo_flags();
    if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line here";
    const CpuFeatureSet detected = detect_cpu_features();
    for (CpuFeature f : kAll)
        EXPECT_EQ(detected.has(f), flags.count(linux_name(f)) == 1) << cpu_feature_name(f);
    // The three the avx2 plugin needs, named explicitly.
    EXPECT_EQ(detected.has(CpuFeature::avx2), flags.count("avx2") == 1);
    EXPECT_EQ(detected.has(CpuFeature::fma), flags.count("fma") == 1);
    EXPECT_EQ(detected.has(CpuFeature::f16c), flags.count("f16c") == 1);
}

TEST(CpuFeatures, WideFeaturesImplyTheirFoundations) {
    const CpuFeatureSet d = detect_cpu_features();
    if (d.has(CpuFeature::avx2)) {
        EXPECT_TRUE(d.has(CpuFeature::avx));
    }
    if (d.has(CpuFeature::avx512bw) || d.has(CpuFeature::avx512vl)) {
        EXPECT_TRUE(d.has(CpuFeature::avx512f));
    }
    EXPECT_EQ(detect_cpu_features().bits, d.bits);  // stable across calls
}

TEST(CpuFeatures, NamesRoundTrip) {
    std::set<std::string> seen;
    for (CpuFeature f : kAll) {
        const std::string name(cpu_feature_name(f));
        EXPECT_TRUE(seen.insert(name).second) << "duplicate name " << name;
        for (char c : name) EXPECT_FALSE(c >= 'A' && c <= 'Z') << name;
        CpuFeature back{};
        ASSERT_TRUE(cpu_feature_from_name(name, back)) << name;
        EXPECT_EQ(back, f);
    }
    EXPECT_EQ(cpu_feature_name(CpuFeature::avx_vnni), "avx_vnni");
    EXPECT_EQ(cpu_feature_name(CpuFeature::avx512_vnni), "avx512_vnni");
    CpuFeature f{};
    EXPECT_TRUE(cpu_feature_from_name("AVX2", f));
    EXPECT_EQ(f, CpuFeature::avx2);
    EXPECT_FALSE(cpu_feature_from_name("avx3", f));
    EXPECT_FALSE(cpu_feature_from_name("", f));
    EXPECT_FALSE(cpu_feature_from_name("avx2 ", f));
}

CpuFeatureSet set_of(std::initializer_list<CpuFeature> features) {
    CpuFeatureSet s;
    for (CpuFeature f : features) s.add(f);
    return s;
}

TEST(CpuFeatures, ScoreIsZeroWhenAnythingIsMissing) {
    const std::vector<CpuFeature> avx2 = {CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c};
    EXPECT_EQ(score_cpu_features(avx2, set_of({CpuFeature::avx2, CpuFeature::fma})), 0);
    EXPECT_EQ(score_cpu_features(avx2, CpuFeatureSet{}), 0);
    EXPECT_GT(score_cpu_features(avx2, set_of({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c})), 0);
    EXPECT_EQ(score_cpu_features({}, CpuFeatureSet{}), 1);  // a plugin needing nothing is usable
    const std::vector<CpuFeature> missing =
        missing_cpu_features(avx2, set_of({CpuFeature::fma}));
    EXPECT_EQ(missing, (std::vector<CpuFeature>{CpuFeature::avx2, CpuFeature::f16c}));
    EXPECT_TRUE(missing_cpu_features(avx2, set_of({CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c})).empty());
}

TEST(CpuFeatures, SupersetScoresHigher) {
    CpuFeatureSet everything;
    for (CpuFeature f : kAll) everything.add(f);
    const std::vector<CpuFeature> avx2 = {CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c};
    const std::vector<CpuFeature> vnni = {CpuFeature::avx2, CpuFeature::fma, CpuFeature::f16c, CpuFeature::avx_vnni};
    const std::vector<CpuFeature> avx = {CpuFeature::avx};
    EXPECT_GT(score_cpu_features(vnni, everything), score_cpu_features(avx2, everything));
    EXPECT_GT(score_cpu_features(avx2, everything), score_cpu_features(avx, everything));
    // Adding a feature to the requirement never lowers the score while it is available.
    for (CpuFeature f : kAll) {
        std::vector<CpuFeature> more = avx2;
        more.push_back(f);
        EXPECT_GT(score_cpu_features(more, everything), score_cpu_features(avx2, everything)) << cpu_feature_name(f);
    }
}

}  // namespace
}  // namespace stormo
