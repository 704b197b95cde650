// stormo against llama.cpp's own outputs on the same GGUF files: llama.cpp's logits over each
// fixture's sequence and its greedy continuation of the prompt, committed in
// tests/data/gguf/llama.cpp (the README there: the llama.cpp build, the tool and the commands).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "gguf_fixture_support.hpp"

namespace stormo::testing {
namespace {

struct LlamaCppCase {
    std::string file;
    std::string fixture;      // whose sequence and prompt
    double max_tolerance;     // max|stormo - llama.cpp| / max|llama.cpp| over the compared positions
    double median_tolerance;  // the median over those positions of each one's max error, same scale
    std::optional<size_t> greedy_equal;  // leading greedy tokens equal to llama.cpp's (of 32), exactly
    size_t positions = 0;     // the leading positions compared (0: all)
    std::string outputs = {};  // llama.cpp's outputs: tests/data/gguf/llama.cpp/<outputs>.*, else the file's stem
};

void PrintTo(const LlamaCppCase& c, std::ostream* os) { *os << (c.outputs.empty() ? c.file : c.outputs); }

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
//
// glm-dsa: llama.cpp cannot run the glm_moe_dsa fixture's files (tests/data/gguf/README.md), so
// these run glm_moe_dsa_wide, the fixture with the widths llama.cpp needs (index_head_dim 64,
// qk_rope_head_dim 32). On it llama.cpp computes another model than transformers' GlmMoeDsa,
// which stormo's glm_dsa family follows (1.7e-6 of the fixture's reference): it rotates
// interleaved pairs of the rope dimensions (LLAMA_ROPE_TYPE_NORM) where transformers rotates split
// halves, and the converter does not reorder the weights for it; and its DSA indexer applies a
// ReLU to each head's q.k before weighting them, which transformers' does not. So only what
// neither difference reaches is compared:
//
//   outputs                              positions  max      median   greedy tokens equal
//   glm_moe_dsa_wide-f16                 0          0.0011   -        0: they part at the first
//   glm_moe_dsa_wide-q8_0                0          0.042    -        0: they part at the first
//   glm_moe_dsa_wide-f16.rope_permuted   0-7        0.0025   0.0011   (not compared)
//   glm_moe_dsa_wide-q8_0.rope_permuted  0-7        0.061    0.035    (not compared)
//
// Position 0 is the rope's identity and attends to itself alone. The rope_permuted outputs are
// llama.cpp's on a copy of the file whose rope rows (q_b_proj's per head, kv_a_proj_with_mqa's,
// the indexer's wq_b, wk and k_norm) are reordered from split-half to interleaved pairs, so that
// llama.cpp's rotation computes transformers'; there positions 0-7 agree to llama.cpp's rounding
// (the F16 and Q8_0 medians above match the other files'), and from position 8 on, where the
// indexer starts choosing 8 of the past positions, they part, as the ReLU would make them (not
// isolated as the only cause; the whole sequence: max 1.37 and 1.19, medians 0.92 and 0.88;
// unpermuted 1.35 / 1.3, 0.98 / 0.88).
const LlamaCppCase kCases[] = {
    {"gpt_oss-f16.gguf", "gpt_oss", 0.2, 0.0065, 32},
    {"gpt_oss-q8_0.gguf", "gpt_oss", 0.4, 0.04, 0},
    {"gpt_oss_mxfp4-f16.gguf", "gpt_oss_mxfp4", 0.75, 0.021, 8},
    {"qwen3_moe-f16.gguf", "qwen3_moe", 0.05, 0.001, 32},
    {"qwen3_moe-q8_0.gguf", "qwen3_moe", 0.45, 0.025, 17},
    {"glm_moe_dsa_wide-f16.gguf", "glm_moe_dsa", 0.0015, 0.0015, 0, 1},
    {"glm_moe_dsa_wide-q8_0.gguf", "glm_moe_dsa", 0.05, 0.05, 0, 1},
    {"glm_moe_dsa_wide-f16.gguf", "glm_moe_dsa", 0.003, 0.0015, std::nullopt, 8, "glm_moe_dsa_wide-f16.rope_permuted"},
    {"glm_moe_dsa_wide-q8_0.gguf", "glm_moe_dsa", 0.07, 0.04, std::nullopt, 8, "glm_moe_dsa_wide-q8_0.rope_permuted"},
};

std::string stem(const LlamaCppCase& c) { return c.outputs.empty() ? c.file.substr(0, c.file.size() - 5) : c.outputs; }
std::string llama_cpp_output(const LlamaCppCase& c, const char* what) { return gguf_path("llama.cpp/" + stem(c) + what); }

// The largest error over the first `rows` rows of [rows, vocab] logits relative to their largest
// |llama.cpp| logit, where it is, and the median over rows of each row's largest error.
struct Agreement {
    double max = 0, median = 0;
    size_t worst_at = 0;
};

Agreement agreement(const std::vector<float>& ours, const std::vector<float>& theirs, size_t rows, size_t vocab) {
    double scale = 0;
    for (size_t i = 0; i < rows * vocab; ++i) scale = std::max(scale, static_cast<double>(std::fabs(theirs[i])));
    std::vector<double> per_row(rows, 0.0);
    for (size_t i = 0; i < rows * vocab; ++i)
        per_row[i / vocab] = std::max(per_row[i / vocab], std::fabs(static_cast<double>(ours[i]) - theirs[i]) / scale);
    Agreement a;
    a.worst_at = static_cast<size_t>(std::max_element(per_row.begin(), per_row.end()) - per_row.begin());
    a.max = per_row[a.worst_at];
    std::sort(per_row.begin(), per_row.end());
    a.median = per_row[rows / 2];
    return a;
}

class GgufAgainstLlamaCpp : public ::testing::TestWithParam<LlamaCppCase> {};

TEST_P(GgufAgainstLlamaCpp, LogitsAndGreedyTokens) {
    const LlamaCppCase& c = GetParam();
    const std::vector<int32_t> ids = fixture_sequence(c.fixture);
    const std::vector<float> ours = all_logits(gguf_path(c.file), ids);
    const std::vector<float> theirs = read_reference(llama_cpp_output(c, ".logits.npy")).floats();
    ASSERT_EQ(ours.size(), theirs.size());
    ASSERT_EQ(theirs.size() % ids.size(), 0u);
    const size_t rows = c.positions ? c.positions : ids.size();
    const Agreement a = agreement(ours, theirs, rows, theirs.size() / ids.size());
    std::printf("[ %s ] vs llama.cpp, positions 0-%zu: logits max relative error %.3g (position %zu), median over "
                "positions %.3g\n", stem(c).c_str(), rows - 1, a.max, a.worst_at, a.median);
    if (rows < ids.size()) {  // what the rest looks like, for the record (docs/gguf.md)
        const Agreement whole = agreement(ours, theirs, ids.size(), theirs.size() / ids.size());
        std::printf("[ %s ] vs llama.cpp, all %zu positions: max %.3g (position %zu), median %.3g\n", stem(c).c_str(),
                    ids.size(), whole.max, whole.worst_at, whole.median);
    }
    EXPECT_LE(a.max, c.max_tolerance);
    EXPECT_LE(a.median, c.median_tolerance);
    if (!c.greedy_equal) return;

    const std::vector<int32_t> prompt =
        int_list(*read_json_file(fixture_dir(c.fixture) + "/reference/input_ids.json").find("input_ids"));
    const std::vector<int32_t> their_greedy = int_list(*read_json_file(llama_cpp_output(c, ".greedy.json")).find("generated"));
    const size_t same = leading_equal(greedy_tokens(c.file, prompt, their_greedy.size()), their_greedy);
    std::printf("[ %s ] greedy: the first %zu of %zu tokens equal llama.cpp's\n", stem(c).c_str(), same, their_greedy.size());
    EXPECT_EQ(same, *c.greedy_equal);
}

std::string case_name(const ::testing::TestParamInfo<LlamaCppCase>& info) {
    std::string n = stem(info.param);
    for (char& ch : n)
        if (ch == '-' || ch == '.') ch = '_';
    return n;
}

INSTANTIATE_TEST_SUITE_P(Files, GgufAgainstLlamaCpp, ::testing::ValuesIn(kCases), case_name);

}  // namespace
}  // namespace stormo::testing
