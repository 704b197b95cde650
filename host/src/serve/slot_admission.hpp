#pragma once
// The worker's two decisions about a queued request, apart from its threads and sockets: which
// free slot it takes (the one whose KV it can keep most of), and whether the KV it may grow to fits
// beside the running ones' in what the engine reserved.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <span>
#include <vector>

#include "stormo/family.hpp"

namespace stormo::serve {

struct SlotState {
    bool busy = false;
    std::span<const int32_t> held;  // the token ids whose KV the slot's session holds
    uint64_t last_used = 0;         // when a request last took it (0: never)
    // The partition of the request that filled its KV (the API key's, "" when shared): a prompt of
    // another partition never keeps or borrows that KV, as it never sees that partition's cached
    // blocks, because how fast an answer starts would tell one client what another asked.
    std::string partition = {};
};

// The free slot for `prompt`: the longest reusable prefix (reusable_prefix; only in a slot of the
// request's partition) first, so a client's next turn finds its conversation's KV; then the least
// recently used, so the conversations other slots keep stay for their next turns as long as
// possible; then the first. nullopt: none free.
std::optional<size_t> choose_slot(std::span<const SlotState> slots, std::span<const int32_t> prompt,
                                  const std::string& partition = {});

// The slot, busy or free, other than `slot`, of the same partition, whose session holds a longer reusable prefix of
// `prompt` than `slot` does: the session `slot` takes that prefix's KV pages from by reference
// (Session::share_prefix) instead of computing them again. nullopt: none holds more.
struct PrefixDonor {
    size_t slot = 0;
    size_t positions = 0;  // reusable_prefix(its held tokens, prompt)
};
std::optional<PrefixDonor> choose_prefix_donor(std::span<const SlotState> slots, size_t slot, std::span<const int32_t> prompt,
                                               const std::string& partition = {});

// The KV bytes handed to running sequences out of the bytes reserved for them. A sequence is
// granted the KV of every position it may reach (its prompt and max_tokens), so what it is granted
// never grows while it runs and the sessions never outgrow the reserve.
class KvLedger {
public:
    // kv: every layer's KV buffers; rewind_slack as the sessions'; reserved: the plan's KV bytes.
    KvLedger(std::vector<KvBufferDecl> kv, size_t rewind_slack, uint64_t reserved);

    // The KV a session holding `positions` positions uses (kv_cache_bytes).
    uint64_t bytes_for(size_t positions) const;
    bool fits(uint64_t bytes) const { return bytes <= reserved_ - granted_; }
    void grant(uint64_t bytes) { granted_ += bytes; }
    void release(uint64_t bytes) { granted_ -= bytes; }
    uint64_t reserved() const { return reserved_; }
    uint64_t granted() const { return granted_; }

private:
    std::vector<KvBufferDecl> kv_;
    size_t rewind_slack_;
    uint64_t reserved_;
    uint64_t granted_ = 0;
};

}  // namespace stormo::serve
