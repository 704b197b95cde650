#pragma once
// Test helpers for checkpoints a test rewrites from a fixture: read every tensor, write a model
// directory with a given config.json and tensors, run it and compare logits bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "model/model_source.hpp"
#include "oracle_support.hpp"
#include "safetensors_writer.hpp"
#include "stormo/dtype.hpp"

namespace stormo::testing {

inline std::string fixture_config_text(const std::string& fixture) {
    return read_text(fixture_dir(fixture) + "/config.json");
}

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

inline std::map<std::string, StoredTensor> read_fixture_tensors(const std::string& fixture) {
    std::map<std::string, StoredTensor> out;
    auto source = open_model_directory(fixture_dir(fixture));
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
    auto engine = open_engine(dir, kernels, 2);
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

inline std::vector<int32_t> fixture_sequence(const std::string& fixture) {
    return int_list(*read_json_file(fixture_dir(fixture) + "/reference/greedy.json").find("full_sequence"));
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return !a.empty() && a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ---- FP8 copies ---------------------------------------------------------------------------------

// The e4m3 code nearest to x (ties to the even code), saturating at +-448.
inline uint8_t to_e4m3(float x) {
    uint8_t best = 0;
    double best_distance = std::numeric_limits<double>::infinity();
    for (unsigned v = 0; v < 256; ++v) {
        if ((v & 0x7Fu) == 0x7Fu) continue;  // NaN
        const double d = std::fabs(static_cast<double>(f8_e4m3_to_f32(static_cast<uint8_t>(v))) - x);
        if (d < best_distance || (d == best_distance && (v & 1u) == 0 && (best & 1u) == 1)) {
            best = static_cast<uint8_t>(v);
            best_distance = d;
        }
    }
    return best;
}

inline float bf16_round(float x) {  // to the nearest BF16 (ties to even), as a float
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    bits &= 0xFFFF0000u;
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

inline std::vector<float> widen(const StoredTensor& t) {
    const size_t n = static_cast<size_t>(element_count(t.shape));
    return to_f32(*dtype_from_name(t.dtype), reinterpret_cast<const std::byte*>(t.bytes.data()), n);
}

inline std::string float_bytes(const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

inline std::string bf16_bytes(const std::vector<float>& v) {
    std::string out(v.size() * 2, '\0');
    for (size_t i = 0; i < v.size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &v[i], 4);
        const uint16_t high = static_cast<uint16_t>(bits >> 16);  // exact: the values are BF16 already
        std::memcpy(out.data() + 2 * i, &high, 2);
    }
    return out;
}

struct Fp8Copies {
    std::map<std::string, StoredTensor> fp8;
    std::map<std::string, StoredTensor> dequantized;  // F32, the values the FP8 copy stands for
    uint64_t fp8_expert_bytes = 0;                    // expert weights and their scales, as stored
};

// The FP8 copy of a fixture and its dequantized F32 twin: the matrices `quantized` names become
// F8_E4M3 with weight_scale_inv per block of [block_rows, block_cols] (BF16 scales, rounded to BF16
// first so they stay exact, for routed experts; F32 for the rest).
inline Fp8Copies make_fp8_copies(const std::string& fixture, const std::function<bool(const std::string&)>& quantized,
                                 int64_t block_rows, int64_t block_cols) {
    Fp8Copies c;
    for (const auto& [name, t] : read_fixture_tensors(fixture)) {
        if (!quantized(name)) {
            c.fp8[name] = t;
            c.dequantized[name] = t;
            continue;
        }
        const int64_t rows = t.shape[0], cols = t.shape[1];
        const int64_t grid_rows = (rows + block_rows - 1) / block_rows, grid_cols = (cols + block_cols - 1) / block_cols;
        const bool expert = name.find(".mlp.experts.") != std::string::npos;
        const std::vector<float> w = widen(t);
        std::vector<float> scales(static_cast<size_t>(grid_rows * grid_cols));
        for (int64_t br = 0; br < grid_rows; ++br)
            for (int64_t bc = 0; bc < grid_cols; ++bc) {
                float amax = 0.0f;
                for (int64_t o = br * block_rows; o < std::min(rows, (br + 1) * block_rows); ++o)
                    for (int64_t i = bc * block_cols; i < std::min(cols, (bc + 1) * block_cols); ++i)
                        amax = std::max(amax, std::fabs(w[static_cast<size_t>(o * cols + i)]));
                float scale = amax > 0.0f ? amax / 448.0f : 1.0f;
                if (expert) scale = bf16_round(scale);  // stored as BF16: keep it exact
                scales[static_cast<size_t>(br * grid_cols + bc)] = scale;
            }
        std::string codes(static_cast<size_t>(rows * cols), '\0');
        std::vector<float> values(static_cast<size_t>(rows * cols));
        for (int64_t o = 0; o < rows; ++o)
            for (int64_t i = 0; i < cols; ++i) {
                const size_t k = static_cast<size_t>(o * cols + i);
                const float scale = scales[static_cast<size_t>((o / block_rows) * grid_cols + i / block_cols)];
                const uint8_t q = to_e4m3(w[k] / scale);
                codes[k] = static_cast<char>(q);
                values[k] = f8_e4m3_to_f32(q) * scale;
            }
        const std::string scale_name = name + "_scale_inv";
        c.fp8[name] = StoredTensor{"F8_E4M3", t.shape, codes};
        c.fp8[scale_name] = expert ? StoredTensor{"BF16", {grid_rows, grid_cols}, bf16_bytes(scales)}
                                   : StoredTensor{"F32", {grid_rows, grid_cols}, float_bytes(scales)};
        c.dequantized[name] = StoredTensor{"F32", t.shape, float_bytes(values)};
        if (expert) c.fp8_expert_bytes += codes.size() + c.fp8[scale_name].bytes.size();
    }
    return c;
}

}  // namespace stormo::testing
