// `stormo bench-session`: the session it saves is the one it loads (the file's bytes, the KV's),
// the loaded session continues with the uninterrupted one's bits in every family, and a missing
// directory is named. No figure's speed is asserted.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.hpp"
#include "oracle_support.hpp"
#include "stormo/json.hpp"

namespace stormo::test {
namespace {

class BenchSession : public ::testing::TestWithParam<std::string> {};

TEST_P(BenchSession, SavesLoadsAndContinuesExactly) {
    const std::string dir = ::testing::TempDir() + "bench-session-" + testing::test_name_of(GetParam());
    std::filesystem::create_directories(dir);
    const auto r = run_cli("bench-session --model " + std::string(STORMO_SOURCE_DIR) + "/models/" + GetParam() +
                           " --prompt-tokens 40 --json --dir " + dir);
    ASSERT_EQ(r.status, 0) << r.err;
    auto parsed = Json::parse(r.out, "bench-session --json");
    ASSERT_TRUE(parsed.has_value()) << parsed.error().message << "\n" << r.out;
    const Json& j = *parsed;
    EXPECT_EQ(j.find("positions")->as_int(), 40);
    EXPECT_EQ(j.find("continues_exactly")->as_bool(), true);
    // The file holds the KV and little else: the tokens, a header, a checksum per page.
    const int64_t kv = *j.find("kv_bytes")->as_int();
    const int64_t file = *j.find("file_bytes")->as_int();
    EXPECT_GE(file, kv);
    EXPECT_LT(file, kv + 16384);
    EXPECT_GT(*j.find("write_bound_bytes_per_s")->as_double(), 0.0);
    // Each round's load against the probe reading the same file, and the save against the write
    // probe, set side by side: the medians of those pairs are figures of their own.
    EXPECT_GT(*j.find("load_bound_ratio_median_round")->as_double(), 0.0);
    EXPECT_GT(*j.find("save_bound_ratio_median_round")->as_double(), 0.0);
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the session file and the probe's file are removed";
    std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Demos, BenchSession, ::testing::ValuesIn(testing::demo_names()),
                         [](const auto& param) { return testing::test_name_of(param.param); });

TEST(BenchSessionErrors, AMissingDirectoryIsNamed) {
    const auto r = run_cli("bench-session --model " + std::string(STORMO_SOURCE_DIR) + "/models/gpt-oss-demo --dir /nonexistent-stormo-dir");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("/nonexistent-stormo-dir"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stormo::test
