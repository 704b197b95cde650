// Every shipped demo model (models/*: trained GPT-OSS and Qwen3-MoE) on its 200 public problems:
// stormo's greedy ids must be transformers' ids for every one (wrong answers included: they are
// what the oracle says), and the teacher-forced logits must match the reference's.
#include "oracle_support.hpp"
#include "runtime/generation.hpp"

namespace stormo::testing {
namespace {

class DemoEval : public ::testing::TestWithParam<std::string> {};

TEST_P(DemoEval, AllPublicProblemsGiveTransformersIds) {
    const std::string dir = demo_dir(GetParam());
    auto engine = open_engine(dir);
    ASSERT_NE(engine, nullptr);
    auto stops = stop_ids_of(engine->source());
    ASSERT_TRUE(stops.has_value());
    ASSERT_EQ(*stops, std::vector<int32_t>{48});
    const DemoAgreement a = run_demo_eval(*engine, dir);
    std::printf("[ %s ] %zu/%zu problems give transformers' ids\n", GetParam().c_str(), a.agree, a.total);
    EXPECT_EQ(a.total, 200u);
    EXPECT_EQ(a.agree, a.total);
    for (const auto& m : a.mismatches) ADD_FAILURE() << m << ": ids differ from transformers";
}

TEST_P(DemoEval, TeacherForcedLogitsMatchReference) {
    const std::string dir = demo_dir(GetParam());
    auto engine = open_engine(dir);
    ASSERT_NE(engine, nullptr);
    const Json eval = read_json_file(dir + "/reference/eval.json");
    const auto* sequences = eval.find("logits_npy")->find("sequences")->as_array();
    const NpyArray ref = read_reference(dir + "/reference/logits.npy");
    const std::vector<float> all = ref.floats();
    const size_t T = static_cast<size_t>(ref.shape[1]), V = static_cast<size_t>(ref.shape[2]);
    for (size_t j = 0; j < sequences->size(); ++j) {
        const auto ids = int_list(*(*sequences)[j].find("ids"));
        auto session = engine->new_session(ids.size());
        ASSERT_TRUE(session.has_value());
        ForwardOptions options;
        options.all_logits = true;
        auto logits = engine->pipeline().forward(**session, ids, options);
        ASSERT_TRUE(logits.has_value()) << logits.error().message;
        std::vector<float> want(all.begin() + static_cast<std::ptrdiff_t>(j * T * V),
                                all.begin() + static_cast<std::ptrdiff_t>((j * T + ids.size()) * V));
        const ErrorStats e = compare(*logits, want);
        std::printf("[ %s ] sequence %zu: logits max abs error %.3g (scale %.3g)\n", GetParam().c_str(), j, e.max_abs,
                    e.scale);
        EXPECT_LE(e.relative(), 1e-4) << "sequence " << j;
    }
}

INSTANTIATE_TEST_SUITE_P(Demos, DemoEval, ::testing::ValuesIn(demo_names()), [](const auto& i) {
    std::string name = i.param;
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
});

}  // namespace
}  // namespace stormo::testing
