#pragma once
// Test helpers for checkpoints rewritten from the qwen3_moe fixture: read every tensor, write a
// model directory with a given config.json and tensors, run it and compare logits bits.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "model/model_source.hpp"
#include "oracle_support.hpp"
#include "safetensors_writer.hpp"

namespace stormo::qwen3_moe {

using testing::parse_config_text;
inline ModelConfig parse_text(const std::string& text) { return parse_config_text(text); }

inline std::string fixture_config_text() { return testing::read_text(testing::fixture_dir("qwen3_moe") + "/config.json"); }

inline void replace_once(std::string& text, const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
}


struct StoredTensor {
    std::string dtype;
    std::vector<int64_t> shape;
    std::string bytes;
};

inline std::map<std::string, StoredTensor> read_fixture_tensors() {
    std::map<std::string, StoredTensor> out;
    auto source = open_model_directory(testing::fixture_dir("qwen3_moe"));
    EXPECT_TRUE(source.has_value()) << source.error().message;
    if (!source) return out;
    for (const TensorInfo& t : (*source)->tensors()) {
        StoredTensor s{std::string(dtype_name(t.dtype)), t.shape, std::string(t.nbytes, '\0')};
        EXPECT_TRUE((*source)->read(t, 0, t.nbytes, s.bytes.data()).has_value());
        out[t.name] = std::move(s);
    }
    return out;
}

inline void write_model(const test::TempDir& dir, const std::string& config, const std::map<std::string, StoredTensor>& tensors) {
    std::vector<test::SyntheticTensor> list;
    for (const auto& [name, t] : tensors) list.push_back({name, t.dtype, t.shape, t.bytes});
    test::write_safetensors(dir.file("model.safetensors"), list);
    test::write_bytes(dir.file("config.json"), config);
}

inline std::vector<float> all_logits(const std::string& dir, const std::vector<int32_t>& ids,
                                     const std::string& kernels = "reference") {
    auto engine = testing::open_engine(dir, kernels, 2);
    EXPECT_NE(engine, nullptr);
    if (!engine) return {};
    auto session = engine->new_session(ids.size());
    EXPECT_TRUE(session.has_value());
    ForwardOptions all;
    all.all_logits = true;
    auto logits = engine->pipeline().forward(**session, ids, all);
    EXPECT_TRUE(logits.has_value()) << (logits ? "" : logits.error().message);
    return logits ? *logits : std::vector<float>{};
}

inline std::vector<int32_t> fixture_sequence() {
    return testing::int_list(
        *testing::read_json_file(testing::fixture_dir("qwen3_moe") + "/reference/greedy.json").find("full_sequence"));
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return !a.empty() && a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace stormo::qwen3_moe
