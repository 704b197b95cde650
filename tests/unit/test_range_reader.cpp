// read_ranges (store/range_reader.hpp): ranges of a file copied through large windows, as the
// resident store loads every expert. Ranges straddle window boundaries, touch, overlap and come
// in any order; the direct (O_DIRECT where the file system has it) and buffered backends give
// the file's bytes; a range past the end of the file fails naming the file and the range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "page_cache_support.hpp"
#include "safetensors_writer.hpp"  // test::TempDir
#include "store/range_reader.hpp"

namespace stormo {
namespace {

uint8_t byte_at(uint64_t i) { return static_cast<uint8_t>((i * 2654435761u) >> 13); }

std::string write_file(const test::TempDir& dir, const std::string& name, uint64_t size) {
    std::vector<char> bytes(size);
    for (uint64_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(byte_at(i));
    const std::string path = dir.file(name);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(size));
    return path;
}

TEST(RangeReader, CopiesRangesAcrossWindowsInAnyOrder) {
    test::TempDir dir;
    // Two and a half windows, not a multiple of the direct-read alignment: the last read stops short.
    const uint64_t size = 2 * kRangeWindowBytes + kRangeWindowBytes / 2 + 123;
    const std::string path = write_file(dir, "weights.bin", size);
    std::mt19937_64 rng(7);
    struct Want {
        uint64_t offset, size;
    };
    std::vector<Want> wants = {
        {0, 1},                                              // the first byte
        {kRangeWindowBytes - 100, 200},                      // across the first window's end
        {kRangeWindowBytes + 100, 2 * kRangeWindowBytes},    // longer than a window, to the file's end... almost
        {size - 5000, 5000},                                 // the file's last bytes
        {12345, 4096},                                       // overlaps nothing, unaligned
        {12345 + 4096, 777},                                 // touches the one before
        {12345 + 1000, 10},                                  // inside an earlier one
    };
    wants[2].size = size - 100 - wants[2].offset;
    for (int i = 0; i < 40; ++i) {
        const uint64_t offset = rng() % size;
        wants.push_back({offset, 1 + rng() % std::min<uint64_t>(size - offset, 3 << 20)});
    }
    for (bool direct : {true, false}) {
        auto backend = make_pread_backend({path}, direct);
        ASSERT_TRUE(backend) << backend.error().message;
        std::vector<std::vector<uint8_t>> got(wants.size());
        std::vector<RangeCopy> ranges;
        for (size_t k = 0; k < wants.size(); ++k) {
            got[k].assign(wants[k].size, 0xEE);
            ranges.push_back({path, wants[k].offset, wants[k].size, got[k].data(), "range " + std::to_string(k)});
        }
        std::shuffle(ranges.begin(), ranges.end(), rng);
        auto r = read_ranges(**backend, ranges);
        ASSERT_TRUE(r) << r.error().message;
        for (size_t k = 0; k < wants.size(); ++k)
            for (uint64_t i = 0; i < wants[k].size; ++i)
                ASSERT_EQ(got[k][i], byte_at(wants[k].offset + i))
                    << (direct ? "direct" : "buffered") << " range " << k << " byte " << i;
    }
}

TEST(RangeReader, ARangePastTheEndOfTheFileNamesTheFileAndTheRange) {
    test::TempDir dir;
    const std::string path = write_file(dir, "short.bin", 10000);
    auto backend = make_pread_backend({path}, true);
    ASSERT_TRUE(backend) << backend.error().message;
    std::vector<uint8_t> a(100), b(100);
    const std::vector<RangeCopy> ranges = {{path, 0, 100, a.data(), "tensor \"ok\""},
                                           {path, 9950, 100, b.data(), "tensor \"blk.3.ffn_up_exps\" (layer 3, expert 1)"}};
    auto r = read_ranges(**backend, ranges);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find(path), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("blk.3.ffn_up_exps"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("ends at byte 10000"), std::string::npos) << r.error().message;
}

// Direct reads leave the ranges' pages out of the page cache, including pages an earlier buffered
// reader left there: they would only take memory the copies need.
TEST(RangeReader, DirectReadsDropTheRangesCachedPages) {
    test::TempDir dir;
    const uint64_t size = 8 << 20;
    const std::string path = write_file(dir, "cached.bin", size);
    test::read_through_cache(path, size);  // as a buffered reader before us would
    auto backend = make_pread_backend({path}, true);
    ASSERT_TRUE(backend) << backend.error().message;
    if (!(*backend)->direct_io()) GTEST_SKIP() << "this file system refuses O_DIRECT: reads stay buffered";
    ASSERT_GT(test::cached_pages(path, size), 0u) << "the setup read did not leave the file cached";
    std::vector<uint8_t> dst(size);
    auto r = read_ranges(**backend, {{path, 0, size, dst.data(), "the whole file"}});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(test::cached_pages(path, size), 0u);
    for (uint64_t i = 0; i < size; i += 4099) ASSERT_EQ(dst[i], byte_at(i)) << i;
}

}  // namespace
}  // namespace stormo
