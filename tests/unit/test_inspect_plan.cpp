// `stormo inspect`'s memory plan against what the engine reserves when it opens the same model with
// the same settings, for every fixture and demo model: the KV cache (a sliding window's ring
// included), the routed experts, the expert budget and the dense part. Both come from
// plan_run_memory; a figure of one computed apart from it would show here.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "oracle_support.hpp"

using namespace stormo;

namespace {

// Past every fixture's sliding window plus a forward block, so the rings are smaller than it.
constexpr size_t kContext = 1024;

struct Case {
    std::string name;
    std::string dir;
};

std::vector<Case> every_model() {
    namespace data = stormo::testing;
    std::vector<Case> cases;
    for (const std::string& f : data::fixture_names()) cases.push_back({"fixture_" + f, data::fixture_dir(f)});
    for (const std::string& d : data::demo_names()) cases.push_back({"demo_" + d, data::demo_dir(d)});
    cases.push_back({"gguf_gpt_oss_demo", std::string(STORMO_GGUF_UNPACKED_DIR) + "/gpt-oss-demo-bf16.gguf"});
    return cases;
}

uint64_t field(const Json& plan, const char* key) {
    const Json* v = plan.find(key);
    EXPECT_TRUE(v && v->as_int()) << key;
    return v && v->as_int() ? static_cast<uint64_t>(*v->as_int()) : 0;
}

class InspectPlan : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(InspectPlan, IsWhatTheEngineReserves) {
    const Case& c = GetParam();
    // Settings that make every figure a fixed number: every expert resident (an auto budget
    // follows the memory free at the moment), dense matrices as the checkpoint holds them
    // (packing keeps a row as BF16 where it would not save), no compact head.
    const std::string settings = " --context " + std::to_string(kContext) +
                                 " --expert-budget all --dense-bf16 plain --head exact-only --threads 1";
    const test::CommandResult inspected = test::run_cli("inspect --json --model '" + c.dir + "'" + settings);
    ASSERT_EQ(inspected.status, 0) << inspected.err;
    auto json = Json::parse(inspected.out, "inspect --json");
    ASSERT_TRUE(json) << json.error().message;
    const Json* plan = json->find("memory_plan");
    ASSERT_NE(plan, nullptr) << inspected.out;

    EngineOptions o;
    o.setup.model_dir = c.dir;
    o.threads = 1;
    o.context = kContext;
    o.expert_budget = SizeSpec{SizeSpec::Kind::all, 0};
    o.dense_bf16 = DenseBf16::plain;
    o.head = HeadRead::exact_only;
    auto engine = Engine::open(o);
    if (!engine && engine.error().kind == ErrorKind::unsupported) GTEST_SKIP() << engine.error().message;
    ASSERT_TRUE(engine) << engine.error().message;
    const RunMemory& reserved = (*engine)->memory();

    EXPECT_EQ(field(*plan, "kv_bytes_for_context"), reserved.kv_bytes);
    auto session = (*engine)->new_session(kContext);
    ASSERT_TRUE(session) << session.error().message;
    EXPECT_EQ((*session)->kv_bytes(), reserved.kv_bytes) << "the session holds other KV than was planned";
    EXPECT_EQ(field(*plan, "expert_bytes"), reserved.expert_bytes);
    EXPECT_EQ(field(*plan, "expert_budget_bytes"), reserved.budget.all ? reserved.expert_bytes : reserved.budget.bytes);
    const Json* all = plan->find("all_experts_resident");
    ASSERT_TRUE(all && all->as_bool());
    EXPECT_EQ(*all->as_bool(), reserved.budget.all);
    EXPECT_EQ(field(*plan, "dense_resident_bytes"), (*engine)->dense_bytes());
    EXPECT_EQ(field(*plan, "compact_head_bytes"), 0u);
}

TEST(InspectPlan, ASlidingWindowIsPlannedAsItsRing) {
    // gpt_oss's fixture slides on some layers: its KV for the context is less than a full cache.
    const std::string model = stormo::testing::fixture_dir("gpt_oss");
    const test::CommandResult r =
        test::run_cli("inspect --json --model '" + model + "' --context " + std::to_string(kContext));
    ASSERT_EQ(r.status, 0) << r.err;
    auto json = Json::parse(r.out, "inspect --json");
    ASSERT_TRUE(json) << json.error().message;
    const Json* plan = json->find("memory_plan");
    ASSERT_NE(plan, nullptr);
    EXPECT_LT(field(*plan, "kv_bytes_for_context"), field(*plan, "kv_bytes_per_token") * kContext);
}

INSTANTIATE_TEST_SUITE_P(EveryModel, InspectPlan, ::testing::ValuesIn(every_model()),
                         [](const ::testing::TestParamInfo<Case>& info) { return stormo::testing::test_name_of(info.param.name); });
