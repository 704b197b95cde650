// The server's admission decisions without HTTP: the slot a request takes (the longest prefix it
// can keep), the KV ledger that admits requests while their KV fits the reserve, and the queue's
// non-blocking pop that keeps arrival order.
#include <gtest/gtest.h>

#include "serve/request_queue.hpp"
#include "serve/slot_admission.hpp"

namespace stormo::serve {
namespace {

TEST(ServeSlots, TheFreeSlotHoldingTheLongestPrefixWins) {
    const std::vector<int32_t> a{1, 2, 3, 4}, b{1, 2, 9}, c{5, 6}, prompt{1, 2, 3, 7, 8};
    std::vector<SlotState> slots{{false, b}, {false, a}, {false, c}};
    EXPECT_EQ(choose_slot(slots, prompt), 1u);  // 3 positions kept against 2 and 0
    slots[1].busy = true;
    EXPECT_EQ(choose_slot(slots, prompt), 0u);  // the best free one
}

TEST(ServeSlots, WithoutAPrefixTheLeastRecentlyUsedSlotIsTaken) {
    const std::vector<int32_t> old_long{9, 9, 9, 9}, recent_short{8}, empty, prompt{1, 2};
    std::vector<SlotState> slots{{false, old_long, 1}, {false, recent_short, 2}, {false, empty, 0}};
    EXPECT_EQ(choose_slot(slots, prompt), 2u);  // never used: the others keep their conversations
    slots[2].busy = true;
    // The old conversation goes, however long: the recent one's next turn is the likelier.
    EXPECT_EQ(choose_slot(slots, prompt), 0u);
}

TEST(ServeSlots, AnotherSlotHoldingMoreOfThePromptLendsItsPrefix) {
    const std::vector<int32_t> system{1, 2, 3, 4, 5, 6}, own{1, 2}, other{7}, prompt{1, 2, 3, 4, 9};
    // Busy or not, the slot holding the longest prefix lends it: 4 positions against the 2 kept.
    std::vector<SlotState> slots{{false, own}, {true, system}, {false, other}};
    const auto donor = choose_prefix_donor(slots, 0, prompt);
    ASSERT_TRUE(donor.has_value());
    EXPECT_EQ(donor->slot, 1u);
    EXPECT_EQ(donor->positions, 4u);
    // A slot that keeps as much itself takes nothing.
    EXPECT_FALSE(choose_prefix_donor(slots, 1, prompt).has_value());
    EXPECT_FALSE(choose_prefix_donor(slots, 2, std::vector<int32_t>{8, 8}).has_value());
}

TEST(ServeSlots, NoneFreeIsNone) {
    const std::vector<int32_t> held{1}, prompt{1, 2};
    std::vector<SlotState> slots{{true, held}, {true, held}};
    EXPECT_FALSE(choose_slot(slots, prompt));
    EXPECT_FALSE(choose_slot({}, prompt));
}

TEST(ServeSlots, TheWholePromptIsNeverReusedSoItsLastPositionRuns) {
    // A slot holding the whole prompt keeps all of it but its last position (reusable_prefix):
    // still the best, and a slot holding more than the prompt is no better.
    const std::vector<int32_t> exact{1, 2, 3}, longer{1, 2, 3, 4, 5}, prompt{1, 2, 3};
    std::vector<SlotState> slots{{false, longer, 2}, {false, exact, 1}};
    EXPECT_EQ(choose_slot(slots, prompt), 1u);  // equal prefixes: the least recently used
}

std::vector<KvBufferDecl> two_layers() {
    KvBufferDecl full;
    full.floats_per_position = 16;
    KvBufferDecl window = full;
    window.window = 8;
    return {full, window};
}

TEST(ServeSlots, TheLedgerAdmitsWhileTheKvFitsTheReserve) {
    KvLedger probe(two_layers(), 0, 0);
    // Past its ring (the window and a forward block), a sliding window's buffer stops growing:
    // 1000 positions cost less than twice 500's, and one more position only the full layer's row.
    const uint64_t thousand = probe.bytes_for(1000);
    EXPECT_LT(thousand, 2 * probe.bytes_for(500));
    EXPECT_EQ(probe.bytes_for(1000) - probe.bytes_for(999), 16 * sizeof(float));

    KvLedger ledger(two_layers(), 0, 2 * thousand);
    EXPECT_TRUE(ledger.fits(thousand));
    ledger.grant(thousand);
    EXPECT_TRUE(ledger.fits(thousand));
    ledger.grant(thousand);
    EXPECT_FALSE(ledger.fits(ledger.bytes_for(1)));  // full: the next request waits
    ledger.release(thousand);
    EXPECT_TRUE(ledger.fits(thousand));
    EXPECT_FALSE(ledger.fits(ledger.bytes_for(1001)));
    EXPECT_EQ(ledger.granted(), thousand);
    EXPECT_EQ(ledger.reserved(), 2 * thousand);
}

std::shared_ptr<Job> job_of(size_t prompt, size_t max_tokens) {
    PreparedRequest p;
    p.prompt.assign(prompt, 1);
    p.max_tokens = max_tokens;
    return std::make_shared<Job>(std::move(p), -1);
}

TEST(ServeSlots, TryPopTakesTheOldestOnlyWhenItIsAdmitted) {
    RequestQueue q(4);
    auto big = job_of(90, 10), small = job_of(5, 5);
    ASSERT_TRUE(q.try_push(big));
    ASSERT_TRUE(q.try_push(small));
    KvLedger ledger(two_layers(), 0, KvLedger(two_layers(), 0, 0).bytes_for(50));
    const auto fits = [&](const Job& j) {
        return ledger.fits(ledger.bytes_for(j.request().prompt.size() + j.request().max_tokens));
    };
    // The oldest does not fit: nothing is taken, not even the small one behind it (first come,
    // first served: a large request is never starved by small ones overtaking it).
    EXPECT_EQ(q.try_pop(fits), nullptr);
    EXPECT_EQ(q.size(), 2u);
    EXPECT_EQ(q.try_pop([](const Job&) { return true; }), big);
    EXPECT_EQ(q.try_pop(fits), small);
    EXPECT_EQ(q.try_pop(fits), nullptr);  // empty
    ASSERT_TRUE(q.try_push(job_of(1, 1)));
    q.close();
    EXPECT_EQ(q.try_pop([](const Job&) { return true; }), nullptr);  // closed
}

}  // namespace
}  // namespace stormo::serve
