#pragma once
// The two paths of the toolkit's multi-head latent attention on a fixture: the absorbed one that
// runs and the expanded one transformers writes (traced as "attn_out_expanded"), layer by layer,
// for every family whose attention is MLA (GLM-5, DeepSeek-V3).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "checkpoint_rewrite.hpp"

namespace stormo::testing {

// Keeps the attention outputs of both paths, by layer.
class BothMlaPaths final : public Tracer {
public:
    bool wants(int) const override { return true; }
    void record(const std::string& name, int layer, const float* data, size_t n_rows, size_t width,
                std::span<const int64_t>) override {
        if (name == "attn_out") absorbed[layer].assign(data, data + n_rows * width);
        if (name == "attn_out_expanded") expanded[layer].assign(data, data + n_rows * width);
    }
    std::map<int, std::vector<float>> absorbed, expanded;
};

// Runs the fixture's sequence once on the reference kernels and holds every layer's absorbed
// output within `tolerance` (relative to the output's scale) of the expanded one.
inline void expect_absorbed_equals_expanded(const std::string& fixture, double tolerance) {
    auto engine = open_engine(fixture_dir(fixture), "reference", 2);
    ASSERT_NE(engine, nullptr);
    const std::vector<int32_t> ids = fixture_sequence(fixture);
    auto session = engine->new_session(ids.size());
    ASSERT_TRUE(session.has_value());
    BothMlaPaths paths;
    ForwardOptions o;
    o.tracer = &paths;
    ASSERT_TRUE(engine->pipeline().forward(**session, ids, o).has_value());
    ASSERT_EQ(paths.absorbed.size(), static_cast<size_t>(engine->model().n_layers()));
    for (const auto& [layer, absorbed] : paths.absorbed) {
        const ErrorStats e = compare(absorbed, paths.expanded.at(layer));
        std::printf("[ %s ] layer %d: absorbed vs expanded max abs %.3g, relative %.3g\n", fixture.c_str(), layer,
                    e.max_abs, e.relative());
        EXPECT_LE(e.relative(), tolerance) << "layer " << layer;
    }
}

}  // namespace stormo::testing
