// stormo against llama.cpp's own outputs on the same GGUF files: llama.cpp's logits over each
// fixture's sequence and its greedy continuation of the prompt, committed in
// tests/data/gguf/llama.cpp (the README there: the llama.cpp build, the tool and the commands).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "gguf_fixture_support.hpp"

namespace stormo::testing {
namespace {

struct LlamaCppCase {
    std::string file;
    std::string fixture;
    double max_tolerance;     // max|stormo - llama.cpp| / max|llama.cpp| over every position
    double median_tolerance;  // the median over positions of each position's max error, same scale
    size_t greedy_equal;      // leading greedy tokens equal to llama.cpp's (of 32), exactly
};

void PrintTo(const LlamaCppCase& c, std::ostream* os) { *os << c.file; }

// Measured on 2026-12-01 (the test prints them), relative to max|llama.cpp logit| (about 20):
//
//   file                    max     (position)  median   greedy tokens equal
//   gpt_oss-f16             0.182   (36)        0.0056   32 of 32
//   gpt_oss-q8_0            0.363   (53)        0.036    0: they part at the first generated token
//   gpt_oss_mxfp4-f16       0.703   (31)        0.019    8: they part at the 9th (position 32)
//   qwen3_moe-f16           0.046   (39)        0.0008   32 of 32
//   qwen3_moe-q8_0          0.424   (37)        0.023    17: they part at the 18th (position 41)
//
// Why they are not closer: stormo computes in float32 on the dequantized weights (its logits
// are transformers' within 2.3e-6 on the F16 files), while llama.cpp's CPU backend rounds the
// activations to the weights' dot-product type before each matrix product (F16 rows for F16
// weights, Q8_0 blocks for Q8_0 and MXFP4 weights) and keeps K and V in F16; for gpt-oss it also
// truncates YaRN's ramp bounds where the fixture's config says not to (docs/gguf.md; how much of
// the gpt_oss files' larger medians this explains was not measured apart). Most positions
// differ by that rounding (the medians); at a few positions the logits move by whole units
// (the maxima), as when a discrete choice of these random tiny models (a router's top-k) flips
// under that rounding, which docs/gguf.md shows for Q8_0 (not traced expert by expert here)
// (at gpt_oss_mxfp4-f16's position 31 llama.cpp's logits are 16 away from both stormo's and
// transformers', which agree). The greedy runs part where such a flip changes the
// argmax: on gpt_oss-q8_0 llama.cpp's first token (397) beats its second (938) by 0.06, while
// transformers' logits rank them the other way by 0.6; qwen3_moe-q8_0's llama.cpp tokens are
// transformers' all 32, stormo's leave them after 17 (its Q8_0 weight rounding alone, see
// test_gguf_qwen3_moe.cpp). The bounds are the measured figures rounded up; the greedy counts
// are exact (both sides are deterministic), so a change in either shows here.
const LlamaCppCase kCases[] = {
    {"gpt_oss-f16.gguf", "gpt_oss", 0.2, 0.0065, 32},
    {"gpt_oss-q8_0.gguf", "gpt_oss", 0.4, 0.04, 0},
    {"gpt_oss_mxfp4-f16.gguf", "gpt_oss_mxfp4", 0.75, 0.021, 8},
    {"qwen3_moe-f16.gguf", "qwen3_moe", 0.05, 0.001, 32},
    {"qwen3_moe-q8_0.gguf", "qwen3_moe", 0.45, 0.025, 17},
};

std::string llama_cpp_output(const std::string& file, const char* what) {
    return gguf_path("llama.cpp/" + file.substr(0, file.size() - 5) + what);
}

class GgufAgainstLlamaCpp : public ::testing::TestWithParam<LlamaCppCase> {};

TEST_P(GgufAgainstLlamaCpp, LogitsAndGreedyTokens) {
    const LlamaCppCase& c = GetParam();
    const std::vector<int32_t> ids = fixture_sequence(c.fixture);
    const std::vector<float> ours = all_logits(gguf_path(c.file), ids);
    const NpyArray theirs_npy = read_reference(llama_cpp_output(c.file, ".logits.npy"));
    const std::vector<float> theirs = theirs_npy.floats();
    ASSERT_EQ(ours.size(), theirs.size());
    ASSERT_EQ(theirs.size() % ids.size(), 0u);
    const size_t vocab = theirs.size() / ids.size();
    const ErrorStats all = compare(ours, theirs);
    std::vector<double> per_position;
    for (size_t p = 0; p < ids.size(); ++p) {
        double worst = 0;
        for (size_t v = 0; v < vocab; ++v)
            worst = std::max(worst, static_cast<double>(std::fabs(ours[p * vocab + v] - theirs[p * vocab + v])));
        per_position.push_back(worst / all.scale);
    }
    std::vector<double> sorted = per_position;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    const size_t worst_at = static_cast<size_t>(std::max_element(per_position.begin(), per_position.end()) - per_position.begin());

    const std::string dir = fixture_dir(c.fixture);
    const std::vector<int32_t> prompt = int_list(*read_json_file(dir + "/reference/input_ids.json").find("input_ids"));
    const std::vector<int32_t> their_greedy = int_list(*read_json_file(llama_cpp_output(c.file, ".greedy.json")).find("generated"));
    const std::vector<int32_t> our_greedy = greedy_tokens(c.file, prompt, their_greedy.size());
    const size_t same = leading_equal(our_greedy, their_greedy);
    std::printf("[ %s ] vs llama.cpp: logits max relative error %.3g (position %zu), median over positions %.3g; "
                "greedy: the first %zu of %zu tokens equal\n",
                c.file.c_str(), all.relative(), worst_at, median, same, their_greedy.size());
    EXPECT_LE(all.relative(), c.max_tolerance);
    EXPECT_LE(median, c.median_tolerance);
    EXPECT_EQ(same, c.greedy_equal);
}

std::string case_name(const ::testing::TestParamInfo<LlamaCppCase>& info) {
    return gguf_case_name(::testing::TestParamInfo<GgufCase>(GgufCase{info.param.file, info.param.fixture, {}, 0, 0}, info.index));
}

INSTANTIATE_TEST_SUITE_P(Files, GgufAgainstLlamaCpp, ::testing::ValuesIn(kCases), case_name);

}  // namespace
}  // namespace stormo::testing
