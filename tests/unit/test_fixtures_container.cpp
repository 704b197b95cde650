// L0, the container: every fixture checkpoint opens, holds exactly the manifest's tensors with the
// manifest's dtype, shape and byte count, and the bytes read back hash to the manifest's sha256.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "stormo/json.hpp"
#include "model/model_source.hpp"
#include "util/file.hpp"
#include "util/sha256.hpp"

namespace stormo {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> fixture_directories() {
    std::vector<fs::path> dirs;
    for (const auto& entry : fs::directory_iterator(fs::path(STORMO_TEST_DATA_DIR) / "fixtures"))
        if (entry.is_directory()) dirs.push_back(entry.path());
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

struct ManifestTensor {
    std::string dtype;
    Shape shape;
    uint64_t nbytes = 0;
    std::string sha256;
};

struct Manifest {
    std::string file;
    std::string file_sha256;
    std::map<std::string, ManifestTensor> tensors;
};

// A member of a manifest object, or null when absent (so a bad manifest fails a check, not the run).
const Json& field(const Json& object, std::string_view key) {
    static const Json null;
    const Json* value = object.find(key);
    return value ? *value : null;
}

// Reads manifest.json; returns false (with a test failure) when it is not as expected.
bool load_manifest(const fs::path& dir, Manifest& out) {
    auto text = read_file((dir / "manifest.json").string());
    EXPECT_TRUE(text) << text.error().message;
    if (!text) return false;
    auto root = Json::parse(*text, "manifest.json");
    EXPECT_TRUE(root) << root.error().message;
    if (!root) return false;
    out.file = field(*root, "file").as_string().value_or("");
    out.file_sha256 = field(*root, "file_sha256").as_string().value_or("");
    const auto* tensors = field(*root, "tensors").as_array();
    EXPECT_NE(tensors, nullptr);
    if (!tensors) return false;
    for (const Json& t : *tensors) {
        ManifestTensor m;
        m.dtype = field(t, "dtype").as_string().value_or("");
        const auto* shape = field(t, "shape").as_array();
        EXPECT_NE(shape, nullptr);
        if (!shape) return false;
        for (const Json& d : *shape) m.shape.push_back(d.as_int().value_or(-1));
        m.nbytes = static_cast<uint64_t>(field(t, "nbytes").as_int().value_or(-1));
        m.sha256 = field(t, "sha256").as_string().value_or("");
        out.tensors.emplace(field(t, "name").as_string().value_or(""), std::move(m));
    }
    return true;
}

TEST(FixtureContainer, EveryFixtureMatchesItsManifest) {
    const auto dirs = fixture_directories();
    ASSERT_GE(dirs.size(), 1u) << "no fixtures under " << STORMO_TEST_DATA_DIR << "/fixtures";
    for (const fs::path& dir : dirs) {
        SCOPED_TRACE(dir.filename().string());
        Manifest manifest;
        ASSERT_TRUE(load_manifest(dir, manifest));
        ASSERT_FALSE(manifest.tensors.empty());

        auto source = open_model_directory(dir.string());
        ASSERT_TRUE(source) << source.error().message;
        std::set<std::string> names;
        for (const TensorInfo& t : (*source)->tensors()) names.insert(t.name);
        std::set<std::string> expected;
        for (const auto& [name, _] : manifest.tensors) expected.insert(name);
        EXPECT_EQ(names, expected);

        for (const auto& [name, m] : manifest.tensors) {
            SCOPED_TRACE(name);
            const TensorInfo* t = (*source)->find(name);
            ASSERT_NE(t, nullptr);
            EXPECT_EQ(dtype_name(t->dtype), m.dtype);
            EXPECT_EQ(t->shape, m.shape);
            EXPECT_EQ(t->nbytes, m.nbytes);
            std::vector<std::byte> bytes(t->nbytes);
            auto r = (*source)->read(*t, 0, t->nbytes, bytes.data());
            ASSERT_TRUE(r) << r.error().message;
            auto digest = sha256_hex(bytes.data(), bytes.size());
            ASSERT_TRUE(digest) << digest.error().message;
            EXPECT_EQ(*digest, m.sha256);
        }

        auto file_digest = sha256_file((dir / manifest.file).string());
        ASSERT_TRUE(file_digest) << file_digest.error().message;
        EXPECT_EQ(*file_digest, manifest.file_sha256);
    }
}

// The demo model: every tensor reads fully, and the tensors account for every byte of the data
// section (the length prefix and header, decoded here independently of the reader, hold the rest).
TEST(FixtureContainer, DemoModelReadsEveryByte) {
    const fs::path dir = fs::path(STORMO_SOURCE_DIR) / "models" / "gpt-oss-demo";
    auto source = open_model_directory(dir.string());
    ASSERT_TRUE(source) << source.error().message;
    ASSERT_FALSE((*source)->tensors().empty());
    EXPECT_EQ(*(*source)->config().string("model_type"), "gpt_oss");

    uint64_t total = 0;
    for (const TensorInfo& t : (*source)->tensors()) {
        std::vector<std::byte> bytes(t.nbytes);
        auto r = (*source)->read(t, 0, t.nbytes, bytes.data());
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(static_cast<uint64_t>(element_count(t.shape)) * dtype_size(t.dtype), t.nbytes) << t.name;
        total += t.nbytes;
    }

    auto file = read_file((dir / "model.safetensors").string());
    ASSERT_TRUE(file) << file.error().message;
    ASSERT_GE(file->size(), 8u);
    uint64_t header = 0;
    for (size_t i = 0; i < 8; ++i) header |= static_cast<uint64_t>(static_cast<unsigned char>((*file)[i])) << (8 * i);
    EXPECT_EQ(total, file->size() - 8 - header);
}

}  // namespace
}  // namespace stormo
