#pragma once
// The qwen3_moe fixture through the shared checkpoint-rewriting helpers, for this family's tests.
#include <map>
#include <string>
#include <vector>

#include "checkpoint_rewrite.hpp"

namespace stormo::qwen3_moe::fixture {

using testing::fixture_config_text;
using testing::replace_once;
using testing::same_bits;
using testing::StoredTensor;
using testing::write_model;
inline ModelConfig parse_text(const std::string& text) { return testing::parse_config_text(text); }
inline std::string fixture_config_text() { return fixture_config_text("qwen3_moe"); }
inline std::map<std::string, StoredTensor> read_fixture_tensors() { return testing::read_fixture_tensors("qwen3_moe"); }
inline std::vector<int32_t> fixture_sequence() { return testing::fixture_sequence("qwen3_moe"); }
inline std::vector<float> all_logits(const std::string& dir, const std::vector<int32_t>& ids) {
    return testing::all_logits(dir, ids);
}

}  // namespace stormo::qwen3_moe::fixture
