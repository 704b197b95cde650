// The logits' bits on every fixture and shipped demo, per kernels choice and activation road,
// compared with bits recorded before a refactoring (tests/data/recorded_logit_bits.json): GPT-OSS's
// before the family toolkit replaced its own helpers, Qwen3-MoE's and GLM-MoE-DSA's before the
// host's family knowledge moved into the plugins and MLA into the toolkit (recorded by the engine
// as it was then), DeepSeek-V3's three oracle fixtures as its plugin first passed the oracle (before its MoE half and
// GLM's became the toolkit's sigmoid_moe), its mscale fixture and demo when they arrived. A refactoring that claims "nothing changes" is held to it here, to the bit.
// Recording (only when the numbers are meant to change, saying why in the commit):
//   STORMO_RECORD_BITS=tests/data/recorded_logit_bits.json build/bin/stormo_tests --gtest_filter='RecordedBits*'
#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "kernel_test_support.hpp"
#include "oracle_support.hpp"
#include "util/sha256.hpp"

namespace stormo::testing {
namespace {

struct BitsCase {
    std::string model;  // a fixture name, "demo" (the gpt-oss demo) or another demo's folder name
    std::string kernels;
    ActivationRoad road;
};

std::string road_name(ActivationRoad r) { return r == ActivationRoad::int8 ? "int8" : "f32"; }
std::string case_key(const BitsCase& c) { return c.model + "/" + c.kernels + "/" + road_name(c.road); }

// The recorded entry a case must match on this CPU. The vnni plugin installs its 512-bit float
// kernels only where the CPU has AVX-512 F/BW/VL ("vnni" entries, recorded on such a CPU);
// elsewhere it runs the avx2 float kernels, and its integer road is bit-exact with every other,
// so its bits are the avx2 plugin's. Where the CPU also has AVX512-BF16, its integer road
// multiplies BF16 matrices by BF16 activations ("vnni-bf16" entries, recorded on such a CPU).
std::string recorded_key(const BitsCase& c) {
    const bool wide_float = cpu_has_all({CpuFeature::avx512f, CpuFeature::avx512bw, CpuFeature::avx512vl});
    if (c.kernels == "vnni" && !wide_float) return c.model + "/avx2/" + road_name(c.road);
    if (c.kernels == "vnni" && c.road == ActivationRoad::int8 && cpu_has_all({CpuFeature::avx512_bf16}))
        return c.model + "/vnni-bf16/" + road_name(c.road);
    return case_key(c);
}

void PrintTo(const BitsCase& c, std::ostream* os) { *os << case_key(c); }

bool is_demo(const std::string& model) { return model == "demo" || model.ends_with("-demo"); }
std::string model_dir(const std::string& model) {
    if (!is_demo(model)) return fixture_dir(model);
    return model == "demo" ? demo_dir() : demo_dir(model);
}

// The fixture's teacher-forced sequence; for the demo, its first four public problems with answers.
std::vector<int32_t> sequence_of(const std::string& model) {
    if (!is_demo(model)) return int_list(*read_json_file(fixture_dir(model) + "/reference/greedy.json").find("full_sequence"));
    std::vector<int32_t> seq;
    const Json eval = read_json_file(model_dir(model) + "/reference/eval.json");
    const auto* problems = eval.find("problems")->as_array();
    for (size_t i = 0; i < 4 && i < problems->size(); ++i)
        for (const char* part : {"prompt_ids", "output_ids"})
            for (int32_t id : int_list(*(*problems)[i].find(part))) seq.push_back(id);
    return seq;
}

std::string recorded_path() { return std::string(STORMO_TEST_DATA_DIR) + "/recorded_logit_bits.json"; }

class RecordedBits : public ::testing::TestWithParam<BitsCase> {};

TEST_P(RecordedBits, LogitsAreTheRecordedBits) {
    const BitsCase& c = GetParam();
    if (const std::string why = kernels_unusable_reason(c.kernels); !why.empty())
        GTEST_SKIP() << why << ": the " << c.kernels << " kernels cannot run here";
    auto engine = open_engine(model_dir(c.model), c.kernels, 2, c.road);
    ASSERT_NE(engine, nullptr);
    const std::vector<int32_t> seq = sequence_of(c.model);
    auto session = engine->new_session(seq.size());
    ASSERT_TRUE(session.has_value()) << session.error().message;
    ForwardOptions all;
    all.all_logits = true;
    auto logits = engine->pipeline().forward(**session, seq, all);
    ASSERT_TRUE(logits.has_value()) << logits.error().message;
    auto digest = sha256_hex(logits->data(), logits->size() * sizeof(float));
    ASSERT_TRUE(digest.has_value());

    if (const char* out = std::getenv("STORMO_RECORD_BITS")) {
        std::ofstream(out, std::ios::app) << recorded_key(c) << " " << *digest << "\n";
        return;
    }
    std::ifstream in(recorded_path());
    ASSERT_TRUE(in.good()) << "cannot read " << recorded_path();
    std::string key, want;
    while (in >> key >> want)
        if (key == recorded_key(c)) {
            EXPECT_EQ(*digest, want) << case_key(c) << " (recorded as " << recorded_key(c)
                                     << "): the logits' bits changed";
            return;
        }
    FAIL() << "no recorded bits for " << recorded_key(c) << " in " << recorded_path();
}

std::vector<BitsCase> all_cases() {
    std::vector<BitsCase> cases;
    for (const char* model : {"gpt_oss", "gpt_oss_long", "gpt_oss_mxfp4", "demo", "qwen3_moe", "qwen3_moe_long",
                              "qwen3-moe-demo", "glm_moe_dsa", "glm_moe_dsa_long", "glm-moe-dsa-demo", "deepseek_v3",
                              "deepseek_v3_long", "deepseek_v3_noqlora", "deepseek_v3_mscale", "deepseek-v3-demo"}) {
        for (const char* k : {"reference", "avx2", "vnni"}) cases.push_back({model, k, ActivationRoad::f32});
        for (const char* k : {"avx2", "vnni"}) cases.push_back({model, k, ActivationRoad::int8});
    }
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Models, RecordedBits, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<BitsCase>& i) {
                             std::string model = i.param.model;
                             std::replace(model.begin(), model.end(), '-', '_');
                             return model + "_" + i.param.kernels + "_" + road_name(i.param.road);
                         });

}  // namespace
}  // namespace stormo::testing
