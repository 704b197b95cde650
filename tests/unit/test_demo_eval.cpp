// The shipped demo model (models/gpt-oss-demo) on its 200 public problems: stormo's greedy ids
// must be transformers' ids for every one (wrong answers included: they are what the oracle says).
#include "oracle_support.hpp"
#include "runtime/generation.hpp"

namespace stormo::testing {
namespace {

TEST(DemoEval, AllPublicProblemsGiveTransformersIds) {
    auto engine = open_engine(demo_dir());
    ASSERT_NE(engine, nullptr);
    auto stops = stop_ids_of(engine->source());
    ASSERT_TRUE(stops.has_value());
    ASSERT_EQ(*stops, std::vector<int32_t>{48});
    const DemoAgreement a = run_demo_eval(*engine);
    std::printf("[ demo ] %zu/%zu problems give transformers' ids\n", a.agree, a.total);
    EXPECT_EQ(a.total, 200u);
    EXPECT_EQ(a.agree, a.total);
    for (const auto& m : a.mismatches) ADD_FAILURE() << m << ": ids differ from transformers";
}

TEST(DemoEval, TeacherForcedLogitsMatchReference) {
    auto engine = open_engine(demo_dir());
    ASSERT_NE(engine, nullptr);
    const Json eval = read_json_file(demo_dir() + "/reference/eval.json");
    const auto* sequences = eval.find("logits_npy")->find("sequences")->as_array();
    const NpyArray ref = read_reference(demo_dir() + "/reference/logits.npy");
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
        std::printf("[ demo ] sequence %zu: logits max abs error %.3g (scale %.3g)\n", j, e.max_abs, e.scale);
        EXPECT_LE(e.relative(), 1e-4) << "sequence " << j;
    }
}

}  // namespace
}  // namespace stormo::testing
