// The pool that sessions' KV pages come from: slots of whole 4 KiB blocks cut from slabs of whole
// huge pages, handed out once at a time, reused after release, and slabs given back to the system
// when nothing in them is held (all but one empty slab).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "runtime/page_pool.hpp"

namespace stormo::testing {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

TEST(PagePool, SlotsAreWholeBlocksOfSlabsOfWholeHugePagesWastingAtMostASixteenth) {
    for (size_t page : {size_t{4}, size_t{4096}, size_t{32768}, size_t{786432}, size_t{12345}, size_t{3u << 20}, size_t{5000000}}) {
        PagePool pool(page);
        EXPECT_EQ(pool.page_bytes(), page);
        EXPECT_EQ(pool.slot_bytes() % 4096, 0u) << page;
        EXPECT_GE(pool.slot_bytes(), page);
        EXPECT_LT(pool.slot_bytes() - page, 4096u);
        const size_t slab = pool.slots_per_slab() * pool.slot_bytes();
        const size_t slab_rounded = (slab + kHugePage - 1) / kHugePage * kHugePage;
        EXPECT_LE((slab_rounded - slab) * 16, slab_rounded) << page;
        EXPECT_GE(pool.slots_per_slab(), 1u);
    }
    // The gpt-oss-20b shape's page (16 positions of 12 full-attention layers): 5 in 4 MiB.
    PagePool pool(786432);
    EXPECT_EQ(pool.slots_per_slab(), 5u);
}

TEST(PagePool, HandsOutDistinctAlignedSlotsAndReusesReleasedOnes) {
    PagePool pool(100000);
    std::vector<void*> slots;
    for (size_t i = 0; i < 3 * pool.slots_per_slab() + 1; ++i) slots.push_back(pool.acquire());
    EXPECT_EQ(pool.slots_in_use(), slots.size());
    std::set<uintptr_t> starts;
    for (void* s : slots) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(s) % 4096, 0u);
        starts.insert(reinterpret_cast<uintptr_t>(s));
        std::memset(s, 0x5a, pool.page_bytes());  // every byte of a slot is writable
    }
    ASSERT_EQ(starts.size(), slots.size());
    for (auto a = starts.begin(), b = std::next(a); b != starts.end(); ++a, ++b) EXPECT_GE(*b - *a, pool.slot_bytes());
    EXPECT_EQ(pool.mapped_bytes() % kHugePage, 0u);
    const uint64_t mapped = pool.mapped_bytes();

    void* again = slots[1];
    pool.release(again);
    EXPECT_EQ(pool.acquire(), again);  // a released slot is the next one handed out
    EXPECT_EQ(pool.mapped_bytes(), mapped);
    for (void* s : slots) pool.release(s);
    EXPECT_EQ(pool.slots_in_use(), 0u);
    // Every slab is empty: one stays mapped for the next page, the rest went back to the system.
    EXPECT_EQ(pool.mapped_bytes(), mapped / 4);
    std::vector<void*> more;
    for (size_t i = 0; i < pool.slots_per_slab(); ++i) more.push_back(pool.acquire());
    EXPECT_EQ(pool.mapped_bytes(), mapped / 4);
    for (void* s : more) pool.release(s);
}

TEST(PagePool, ThreadsTakingAndGivingPagesAtOnceNeverShareASlot) {
    PagePool pool(65536);
    auto work = [&](unsigned char mark, std::vector<int>* wrong) {
        std::vector<void*> held;
        for (int round = 0; round < 200; ++round) {
            for (int i = 0; i < 7; ++i) {
                held.push_back(pool.acquire());
                std::memset(held.back(), mark, pool.page_bytes());
            }
            for (void* s : held) {
                const auto* b = static_cast<const unsigned char*>(s);
                if (std::any_of(b, b + pool.page_bytes(), [&](unsigned char c) { return c != mark; })) wrong->push_back(round);
                pool.release(s);
            }
            held.clear();
        }
    };
    std::vector<int> wrong_a, wrong_b;
    {
        std::jthread a(work, static_cast<unsigned char>(1), &wrong_a);
        std::jthread b(work, static_cast<unsigned char>(2), &wrong_b);
    }
    EXPECT_TRUE(wrong_a.empty());
    EXPECT_TRUE(wrong_b.empty());
    EXPECT_EQ(pool.slots_in_use(), 0u);
}

}  // namespace
}  // namespace stormo::testing
