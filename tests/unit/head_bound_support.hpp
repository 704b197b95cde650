#pragma once
// Helpers for the bounded head's tests: a head matrix built from floats (F32 or BF16), the
// computes to run it on (the reference table and each kernels plugin usable here, with a pool),
// and the full head's argmax to compare with.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compute/worker_pool.hpp"
#include "kernel_test_support.hpp"
#include "oracle_support.hpp"
#include "runtime/bounded_argmax.hpp"
#include "runtime/compact_head.hpp"
#include "runtime/sampler.hpp"

namespace stormo::testing {

// A head [rows, cols] in F32 or BF16 (BF16 keeps the top 16 bits of each float: the caller gives
// values that are exact in BF16 when it needs them exact).
struct TestHead {
    size_t rows = 0, cols = 0;
    WeightFormat format = WeightFormat::F32;
    std::vector<uint8_t> bytes;

    TestHead(const std::vector<float>& w, size_t r, size_t c, WeightFormat f = WeightFormat::F32)
        : rows(r), cols(c), format(f) {
        if (f == WeightFormat::F32) {
            bytes.resize(w.size() * 4);
            std::memcpy(bytes.data(), w.data(), bytes.size());
        } else {
            bytes.resize(w.size() * 2);
            for (size_t i = 0; i < w.size(); ++i) {
                uint32_t b;
                std::memcpy(&b, &w[i], 4);
                const auto h = static_cast<uint16_t>(b >> 16);
                std::memcpy(bytes.data() + 2 * i, &h, 2);
            }
        }
    }
    WeightView view() const {
        WeightView v;
        v.format = format;
        v.layout = Layout::out_in;
        v.data = bytes.data();
        v.rows = rows;
        v.cols = cols;
        return v;
    }
};

// The kernels a head is tested on: the reference alone (no pool), then each kernels plugin that
// runs here, through an engine opened on a fixture with that plugin forced (the engine keeps the
// plugin's library loaded), with its pool of 2 threads.
struct HeadComputes {
    std::vector<std::string> names;
    std::vector<Compute> computes;
    std::vector<std::unique_ptr<Engine>> engines;

    HeadComputes() {
        names.push_back("reference");
        computes.push_back(Compute{&reference_kernels(), nullptr, false});
        for (const char* k : {"reference", "avx2", "vnni"}) {
            if (!kernels_unusable_reason(k).empty()) continue;
            auto e = try_open_engine(fixture_dir("gpt_oss"), k, 2);
            EXPECT_TRUE(e.has_value()) << (e ? "" : e.error().message);
            if (!e) continue;
            names.push_back(std::string(k) + ", 2 threads");
            computes.push_back((*e)->compute());
            engines.push_back(std::move(*e));
        }
    }
};

inline const HeadComputes& head_computes() {
    static const HeadComputes computes;  // opened once per test binary: engines load plugins
    return computes;
}

// argmax(matmul(head, x)) with the lowest index among equals: what the full head gives.
inline int32_t full_head_argmax(const Compute& c, const WeightView& head, const std::vector<float>& x) {
    std::vector<float> y(head.rows);
    matmul(c, head, x.data(), 1, y.data());
    return argmax(y);
}

// The bounded head's token on every compute equals the full head's; returns the exact rows of
// the last compute (the others agree on the token, not necessarily on the count: their cheap
// passes round differently).
inline size_t expect_bounded_equals_full(const TestHead& head, const std::vector<float>& x, const std::string& what) {
    size_t exact = 0;
    const HeadComputes& hc = head_computes();
    for (size_t k = 0; k < hc.computes.size(); ++k) {
        const Compute& c = hc.computes[k];
        auto compact = CompactHead::build(head.view(), c);
        EXPECT_TRUE(compact.has_value()) << (compact ? "" : compact.error().message);
        if (!compact) return 0;
        auto pick = bounded_argmax(*compact, head.view(), c, x.data());
        EXPECT_TRUE(pick.has_value()) << (pick ? "" : pick.error().message);
        if (!pick) return 0;
        EXPECT_TRUE(pick->finite) << what << " on " << hc.names[k];
        EXPECT_EQ(pick->token, full_head_argmax(c, head.view(), x)) << what << " on " << hc.names[k];
        EXPECT_GE(pick->exact_rows, 1u);
        exact = pick->exact_rows;
    }
    return exact;
}

}  // namespace stormo::testing
