#pragma once
// Test helper: the demo GGUF (tests/data/gguf/gpt-oss-demo.tar.xz, unpacked by the build) and the
// same model as gguf-split writes it in two parts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf_writer.hpp"
#include "model/gguf.hpp"
#include "model/gguf_split.hpp"
#include "safetensors_writer.hpp"

namespace stormo::testing {

inline std::string demo_gguf() { return std::string(STORMO_GGUF_UNPACKED_DIR) + "/gpt-oss-demo-bf16.gguf"; }

// A metadata value re-encoded as the file laid it out.
inline void copy_value(test::GgufBuilder& b, const std::string& key, const GgufValue& v) {
    const auto type = static_cast<uint32_t>(v.type);
    if (v.type == GgufValueType::string) {
        b.kv_str(key, v.text);
    } else if (v.is_array() && v.element_type == GgufValueType::string) {
        b.kv_strs(key, std::vector<std::string>(v.strings.begin(), v.strings.end()));
    } else if (v.is_array()) {
        std::string e;
        test::put_u32(e, static_cast<uint32_t>(v.element_type));
        test::put_u64(e, v.count);
        e.append(reinterpret_cast<const char*>(v.raw.data()), v.raw.size());
        b.kv_raw(key, type, e);
    } else {
        b.kv_raw(key, type, std::string(reinterpret_cast<const char*>(v.raw.data()), v.raw.size()));
    }
}

// The demo GGUF as gguf-split writes it in two parts: the metadata in the first, the tensors
// divided between them. Returns the parts' paths.
inline std::vector<std::string> write_demo_split(const test::TempDir& dir) {
    auto demo = GgufFile::open(demo_gguf());
    EXPECT_TRUE(demo) << demo.error().message;
    const GgufHeader& h = demo->header();
    std::vector<std::string> paths;
    const size_t half = h.tensors.size() / 2;
    for (int part = 0; part < 2; ++part) {
        test::GgufBuilder b;
        b.alignment = h.alignment;
        if (part == 0)
            for (const auto& [key, value] : h.metadata) copy_value(b, key, value);
        b.kv_u16("split.no", static_cast<uint16_t>(part));
        b.kv_u16("split.count", 2);
        b.kv_i32("split.tensors.count", static_cast<int32_t>(h.tensors.size()));
        for (size_t i = part == 0 ? 0 : half; i < (part == 0 ? half : h.tensors.size()); ++i) {
            const GgufTensorInfo& t = h.tensors[i];
            const std::span<const std::byte> bytes = demo->bytes(t);
            b.tensor(test::GgufTestTensor(t.name, static_cast<uint32_t>(t.type), std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                                          std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
        }
        paths.push_back(dir.file(gguf_split_path("demo", part + 1, 2)));
        b.write(paths.back());
    }
    return paths;
}

}  // namespace stormo::testing
