// The engine leaves no copy of the model's files in the page cache once it has loaded them: the
// dense part is in RAM and the experts are read past the cache, so cached pages would only crowd
// the memory the experts' huge pages need, and the next program's. drop_page_cache is a hint;
// where the file system keeps pages regardless (tmpfs), the tests say so and skip.
//
// The test works on a private copy of each fixture: ctest runs other tests beside it that read the
// shared fixture files, and one of them reading while the engine loads puts pages back (seen in CI:
// glm_moe_dsa's whole file, 200 pages, cached after open, while the manifest test read every fixture).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "oracle_support.hpp"  // fixture_dir
#include "page_cache_support.hpp"
#include "runtime/engine.hpp"
#include "safetensors_writer.hpp"  // TempDir
#include "util/file.hpp"

namespace stormo::testing {
namespace {

uint64_t size_of(const std::string& path) { return std::filesystem::file_size(path); }

// The files Engine::open reads of a fixture, copied where no other test reads them.
void copy_model(const std::string& from, const test::TempDir& to) {
    for (const char* file : {"config.json", "generation_config.json", "model.safetensors"}) {
        const std::filesystem::path source = std::filesystem::path(from) / file;
        if (std::filesystem::exists(source)) std::filesystem::copy_file(source, to.file(file));
    }
}

// Skips the calling test where dropping does nothing on this file system.
bool drops_work_here(const std::string& path) {
    const uint64_t size = size_of(path);
    test::read_through_cache(path, size);
    if (test::cached_pages(path, size) == 0) return false;
    drop_page_cache(path);
    return test::cached_pages(path, size) == 0;
}

TEST(PageCache, AnOpenEngineLeavesNoneOfTheModelFilesCached) {
    for (const char* name : {"gpt_oss", "qwen3_moe", "glm_moe_dsa"}) {
        const test::TempDir copy;
        copy_model(fixture_dir(name), copy);
        const std::string dir = copy.path();
        const std::string path = copy.file("model.safetensors");
        if (!drops_work_here(path)) GTEST_SKIP() << "this file system keeps its pages (tmpfs?)";
        test::read_through_cache(path, size_of(path));
        ASSERT_GT(test::cached_pages(path, size_of(path)), 0u) << name;
        EngineOptions o;
        o.setup.model_dir = dir;
        o.threads = 2;
        auto engine = Engine::open(o);
        ASSERT_TRUE(engine) << name << ": " << engine.error().message;
        EXPECT_EQ(test::cached_pages(path, size_of(path)), 0u) << name;
    }
}

}  // namespace
}  // namespace stormo::testing
