#pragma once
// Helpers for tests that compare stormo with the transformers references in tests/data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/engine.hpp"
#include "runtime/generation.hpp"
#include "stormo/json.hpp"
#include "util/npy.hpp"

namespace stormo::testing {

inline std::string fixture_dir(const std::string& name) { return std::string(STORMO_TEST_DATA_DIR) + "/fixtures/" + name; }
// The shipped demo models (models/<name>, trained; they add, sort and reverse), gpt-oss-demo first.
inline std::string demo_dir(const std::string& name = "gpt-oss-demo") {
    return std::string(STORMO_SOURCE_DIR) + "/models/" + name;
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A config.json text parsed as a family would read it (a parse error fails the test).
inline ModelConfig parse_config_text(const std::string& text, const std::string& name = "test/config.json") {
    auto c = ModelConfig::parse(text, name);
    EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
    return c ? *c : ModelConfig{};
}

inline Json read_json_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = Json::parse(ss.str(), path);
    EXPECT_TRUE(j.has_value()) << (j ? "" : j.error().message);
    return j ? *j : Json();
}

inline std::vector<int32_t> int_list(const Json& j) {
    std::vector<int32_t> out;
    if (const auto* a = j.as_array())
        for (const auto& v : *a) out.push_back(static_cast<int32_t>(*v.as_int()));
    return out;
}

inline NpyArray read_reference(const std::string& path) {
    auto a = read_npy(path);
    EXPECT_TRUE(a.has_value()) << (a ? "" : a.error().message);
    return a ? *a : NpyArray{};
}

// Every fixture under tests/data/fixtures (a directory holding a config.json), sorted by name:
// the suites parameterised by fixture take this list, so a family's fixtures add its tests.
inline std::vector<std::string> fixture_names() {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(std::string(STORMO_TEST_DATA_DIR) + "/fixtures"))
        if (entry.is_directory() && std::filesystem::exists(entry.path() / "config.json"))
            names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

inline Expected<std::unique_ptr<Engine>> try_open_engine(const std::string& dir, const std::string& kernels = "auto",
                                                         size_t threads = 2, ActivationRoad road = ActivationRoad::f32) {
    EngineOptions o;
    o.setup.model_dir = dir;
    o.setup.kernels.value = kernels;
    o.threads = threads;
    o.activations = road;
    return Engine::open(o);
}

// Every demo model under models/ (a directory holding a config.json), sorted by name.
inline std::vector<std::string> demo_names() {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(std::string(STORMO_SOURCE_DIR) + "/models"))
        if (entry.is_directory() && std::filesystem::exists(entry.path() / "config.json"))
            names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// The fixtures, then the shipped demos: what a suite parameterised by model runs on.
inline std::vector<std::string> fixture_and_demo_names() {
    std::vector<std::string> names = fixture_names();
    for (const std::string& d : demo_names()) names.push_back(d);
    return names;
}

// The directory (or GGUF file) of a model a suite names: a fixture, a shipped demo ("*-demo"), or a
// GGUF file under tests/data/gguf ("*.gguf").
inline std::string model_dir_of(const std::string& name) {
    if (name.ends_with(".gguf")) return std::string(STORMO_TEST_DATA_DIR) + "/gguf/" + name;
    if (name.ends_with("-demo")) return demo_dir(name);
    return fixture_dir(name);
}

// Token ids every model of that list reads: a fixture's reference sequence (a GGUF file's fixture's:
// the name up to its first '-'), or the demos' characters.
inline std::vector<int32_t> token_source_of(const std::string& name) {
    if (name.ends_with("-demo")) return {1, 2, 0, 40, 3, 4, 8, 45, 4, 6, 8, 48, 27, 14, 31, 44, 20, 32, 18, 45, 7, 9};
    const std::string fixture = name.ends_with(".gguf") ? name.substr(0, name.find('-')) : name;
    return int_list(*read_json_file(fixture_dir(fixture) + "/reference/greedy.json").find("full_sequence"));
}

// A gtest parameter name from any text (a model's name, a file): letters, digits and underscores.
inline std::string test_name_of(std::string_view text) {
    std::string name(text);
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return name;
}

// In a fixture's SetUp: opens the engine into `target`, or skips the test when the fixture's family
// cannot run in this build (its plugin says `unsupported`, naming what is missing).
#define STORMO_OPEN_FIXTURE_OR_SKIP(target, ...)                                                   \
    do {                                                                                           \
        auto stormo_opened_ = ::stormo::testing::try_open_engine(__VA_ARGS__);                     \
        if (!stormo_opened_ && stormo_opened_.error().kind == ::stormo::ErrorKind::unsupported)    \
            GTEST_SKIP() << stormo_opened_.error().message;                                        \
        ASSERT_TRUE(stormo_opened_.has_value()) << stormo_opened_.error().message;                 \
        target = std::move(*stormo_opened_);                                                       \
    } while (0)

// The first layer whose FFN is routed (GLM's first layers are dense).
// Whether two logit vectors hold the same bits (NaNs included), not merely equal values.
inline bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// Runs `tokens` through the session and returns every position's logits.
inline std::vector<float> all_logits(Pipeline& pipeline, Session& session, std::span<const int32_t> tokens) {
    ForwardOptions all;
    all.all_logits = true;
    auto logits = pipeline.forward(session, tokens, all);
    EXPECT_TRUE(logits.has_value()) << logits.error().message;
    return logits ? *logits : std::vector<float>{};
}

inline int first_moe_layer(const Model& model) {
    for (int l = 0; l < model.n_layers(); ++l)
        if (model.layer_plan(l).ffn == FfnKind::moe) return l;
    return -1;
}

inline std::unique_ptr<Engine> open_engine(const std::string& dir, const std::string& kernels = "auto", size_t threads = 2,
                                           ActivationRoad road = ActivationRoad::f32) {
    EngineOptions o;
    o.setup.model_dir = dir;
    o.setup.kernels.value = kernels;
    o.threads = threads;
    o.activations = road;
    auto e = Engine::open(o);
    EXPECT_TRUE(e.has_value()) << (e ? "" : e.error().message);
    return e ? std::move(*e) : nullptr;
}

// The demo model's 200 public problems (reference/eval.json): greedy, at most 12 new tokens, stop
// at the eos, each compared with transformers' output ids.
struct DemoAgreement {
    size_t agree = 0;
    size_t total = 0;
    std::vector<std::string> mismatches;  // "problem N (prompt)"
};

inline DemoAgreement run_demo_eval(Engine& engine, const std::string& dir = demo_dir()) {
    DemoAgreement a;
    const Json eval = read_json_file(dir + "/reference/eval.json");
    const auto* problems = eval.find("problems")->as_array();
    auto stops = stop_ids_of(engine.source());
    auto session = engine.new_session(64);
    EXPECT_TRUE(problems && stops && session);
    if (!problems || !stops || !session) return a;
    for (const auto& p : *problems) {
        (*session)->rewind(0);
        GenerationRequest request;
        request.prompt = int_list(*p.find("prompt_ids"));
        request.max_tokens = 12;
        request.stop_ids = *stops;
        auto result = generate(engine.pipeline(), **session, request);
        EXPECT_TRUE(result.has_value()) << result.error().message;
        ++a.total;
        if (result && result->tokens == int_list(*p.find("output_ids")))
            ++a.agree;
        else
            a.mismatches.push_back("problem " + std::to_string(*p.find("index")->as_int()) + " (" +
                                   *p.find("prompt")->as_string() + ")");
    }
    return a;
}

// Collects the routing the family reports through the tracer, for every position: the router's
// top-k, and (GLM) the positions the DSA indexer kept.
class RoutingRecorder final : public Tracer {
public:
    bool wants(int) const override { return true; }
    void record(const std::string& name, int layer, const float* data, size_t n_rows, size_t width,
                std::span<const int64_t> positions) override {
        auto* into = name == "router_topk_idx" ? &topk : name == "dsa_topk_idx" ? &dsa : nullptr;
        if (into == nullptr) return;
        for (size_t r = 0; r < n_rows; ++r) (*into)[{layer, positions[r]}].assign(data + r * width, data + (r + 1) * width);
    }
    std::map<std::pair<int, int64_t>, std::vector<float>> topk;
    std::map<std::pair<int, int64_t>, std::vector<float>> dsa;
};

// Router top-k entries that differ from the reference's router_topk_idx.npy [moe layers, T, k],
// which lists the MoE layers only, in order (dense layers have no router). SIZE_MAX when a
// recorded routing is missing.
inline size_t router_topk_mismatches(const Model& model, const RoutingRecorder& routing, const NpyArray& ref) {
    const std::vector<int64_t> idx = ref.ints();
    const size_t n_moe = static_cast<size_t>(ref.shape[0]), T = static_cast<size_t>(ref.shape[1]),
                 k = static_cast<size_t>(ref.shape[2]);
    std::vector<int> moe_layers;
    for (int l = 0; l < model.n_layers(); ++l)
        if (model.layer_plan(l).ffn == FfnKind::moe) moe_layers.push_back(l);
    if (moe_layers.size() != n_moe) return SIZE_MAX;
    size_t mismatches = 0;
    for (size_t l = 0; l < n_moe; ++l)
        for (size_t t = 0; t < T; ++t) {
            auto it = routing.topk.find({moe_layers[l], static_cast<int64_t>(t)});
            if (it == routing.topk.end() || it->second.size() != k) return SIZE_MAX;
            for (size_t s = 0; s < k; ++s)
                if (static_cast<int64_t>(it->second[s]) != idx[(l * T + t) * k + s]) ++mismatches;
        }
    return mismatches;
}

// GLM: rows whose DSA-indexer positions differ from the reference's dsa_topk_idx.npy
// [layers, T, index_topk] (compared as sets; -1 marks a slot the reference filled with a causally
// masked key while the context was shorter than index_topk). `dropping` counts the rows where the
// indexer really dropped positions. SIZE_MAX when a recorded choice is missing.
inline size_t dsa_mismatches(const RoutingRecorder& routing, const NpyArray& ref, size_t& dropping) {
    const std::vector<int64_t> dsa = ref.ints();
    const size_t layers = static_cast<size_t>(ref.shape[0]), T = static_cast<size_t>(ref.shape[1]),
                 K = static_cast<size_t>(ref.shape[2]);
    size_t mismatches = 0;
    dropping = 0;
    for (size_t l = 0; l < layers; ++l)
        for (size_t t = 0; t < T; ++t) {
            std::vector<int64_t> want, got;
            for (size_t s = 0; s < K; ++s)
                if (const int64_t p = dsa[(l * T + t) * K + s]; p >= 0) want.push_back(p);
            std::sort(want.begin(), want.end());
            auto it = routing.dsa.find({static_cast<int>(l), static_cast<int64_t>(t)});
            if (it == routing.dsa.end()) return SIZE_MAX;
            for (float p : it->second)
                if (p >= 0) got.push_back(static_cast<int64_t>(p));
            mismatches += got != want;
            dropping += want.size() < t + 1;
        }
    return mismatches;
}

struct ErrorStats {
    double max_abs = 0.0;
    double scale = 0.0;  // max |reference|
    double relative() const { return scale > 0 ? max_abs / scale : max_abs; }
};

inline ErrorStats compare(const std::vector<float>& got, const std::vector<float>& want) {
    ErrorStats s;
    EXPECT_EQ(got.size(), want.size());
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
        s.max_abs = std::max(s.max_abs, static_cast<double>(std::fabs(got[i] - want[i])));
        s.scale = std::max(s.scale, static_cast<double>(std::fabs(want[i])));
    }
    return s;
}

// Random-weight checkpoints (stormo synth's presets): every logit of `ids` through `session` is
// finite and their RMS is of unit order (0.1 to 10): the value ranges neither vanish nor explode
// through the layers.
inline void expect_finite_unit_order_logits(Engine& engine, Session& session, const std::vector<int32_t>& ids,
                                            size_t vocab) {
    ForwardOptions fo;
    fo.all_logits = true;
    auto logits = engine.pipeline().forward(session, ids, fo);
    ASSERT_TRUE(logits.has_value()) << logits.error().message;
    ASSERT_EQ(logits->size(), ids.size() * vocab);
    double sum_sq = 0.0;
    for (float v : *logits) {
        ASSERT_TRUE(std::isfinite(v));
        sum_sq += static_cast<double>(v) * v;
    }
    const double rms = std::sqrt(sum_sq / static_cast<double>(logits->size()));
    EXPECT_GT(rms, 0.1);
    EXPECT_LT(rms, 10.0);
}

}  // namespace stormo::testing
