// `stormo inspect` on a GLM-MoE-DSA GGUF file. The family's summary derives from the config its
// load parses, so whatever config the model loads with, inspect describes: the GGUF mapping's
// config has no num_key_value_heads (MLA has no use for it), which a summary with rules of its
// own once refused.
#include <gtest/gtest.h>

#include <string>

#include "cli_runner.hpp"
#include "stormo/json.hpp"

namespace stormo::testing {
namespace {

int64_t integer_at(const Json& object, const char* key) {
    const Json* v = object.find(key);
    EXPECT_NE(v, nullptr) << key;
    return v != nullptr ? v->as_int().value_or(-1) : -1;
}

TEST(InspectGlmDsaGguf, DescribesTheConfigTheModelLoadsWith) {
    const stormo::test::CommandResult r =
        stormo::test::run_cli("inspect --json --model '" + std::string(STORMO_TEST_DATA_DIR) + "/gguf/glm_moe_dsa-f16.gguf'");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = Json::parse(r.out, "stdout");
    ASSERT_TRUE(j.has_value()) << j.error().message;
    const Json* dims = j->find("dimensions");
    ASSERT_NE(dims, nullptr);
    // The fixture's shapes (tests/data/fixtures/glm_moe_dsa/config.json).
    EXPECT_EQ(integer_at(*dims, "q_lora_rank"), 32);
    EXPECT_EQ(integer_at(*dims, "kv_lora_rank"), 32);
    EXPECT_EQ(integer_at(*dims, "index_head_dim"), 16);
    EXPECT_EQ(dims->find("num_key_value_heads"), nullptr);
    EXPECT_EQ(integer_at(*j, "n_layers"), 4);
    EXPECT_EQ(integer_at(*j, "n_experts"), 8);
    // Latent, rope key and indexer key on each of the 4 layers.
    EXPECT_EQ(integer_at(*j, "kv_floats_per_token"), 4 * (32 + 8 + 16));
}

}  // namespace
}  // namespace stormo::testing
