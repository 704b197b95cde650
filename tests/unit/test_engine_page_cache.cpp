// The engine leaves no copy of the model's files in the page cache once it has loaded them: the
// dense part is in RAM and the experts are read past the cache, so cached pages would only crowd
// the memory the experts' huge pages need, and the next program's. drop_page_cache is a hint;
// where the file system keeps pages regardless (tmpfs), the tests say so and skip.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "oracle_support.hpp"  // fixture_dir
#include "page_cache_support.hpp"
#include "runtime/engine.hpp"
#include "util/file.hpp"

namespace stormo::testing {
namespace {

uint64_t size_of(const std::string& path) { return std::filesystem::file_size(path); }

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
        const std::string dir = fixture_dir(name);
        const std::string path = dir + "/model.safetensors";
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
