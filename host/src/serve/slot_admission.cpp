#include "serve/slot_admission.hpp"

#include "runtime/generation.hpp"
#include "runtime/memory_plan.hpp"

namespace stormo::serve {

std::optional<size_t> choose_slot(std::span<const SlotState> slots, std::span<const int32_t> prompt, const std::string& partition) {
    std::optional<size_t> best;
    size_t best_prefix = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
        if (slots[i].busy) continue;
        const size_t prefix = slots[i].partition == partition ? reusable_prefix(slots[i].held, prompt) : 0;
        if (!best || prefix > best_prefix || (prefix == best_prefix && slots[i].last_used < slots[*best].last_used)) {
            best = i;
            best_prefix = prefix;
        }
    }
    return best;
}

std::optional<PrefixDonor> choose_prefix_donor(std::span<const SlotState> slots, size_t slot, std::span<const int32_t> prompt,
                                               const std::string& partition) {
    std::optional<PrefixDonor> best;
    size_t own = slot < slots.size() && slots[slot].partition == partition ? reusable_prefix(slots[slot].held, prompt) : 0;
    for (size_t i = 0; i < slots.size(); ++i) {
        if (i == slot || slots[i].partition != partition) continue;
        const size_t prefix = reusable_prefix(slots[i].held, prompt);
        if (prefix > own) {
            best = PrefixDonor{i, prefix};
            own = prefix;
        }
    }
    return best;
}

KvLedger::KvLedger(std::vector<KvBufferDecl> kv, size_t rewind_slack, uint64_t reserved)
    : kv_(std::move(kv)), rewind_slack_(rewind_slack), reserved_(reserved) {}

uint64_t KvLedger::bytes_for(size_t positions) const { return kv_cache_bytes(kv_, positions, rewind_slack_); }

}  // namespace stormo::serve
