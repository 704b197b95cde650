#pragma once
// The streaming store's placement rules over slots that hold names, not bytes: which (layer,
// expert) each slot holds, its standing (on probation, read ahead and not used yet), and the
// pins of the step in progress. cache-sim replays whole traces through it; the adaptive eviction
// policy keeps one per candidate policy as a shadow of the store, to see which would hit more.
//
// The rules (streaming_store.cpp's): a step's experts are acquired together and stay pinned
// until the step ends, so none of them evicts another; every miss is read into a slot (unless
// the step alone has more experts than there are slots); the place is VictimChoice's among the
// unpinned slots; a read ahead never evicts another unused one and takes only an empty place or
// one on probation. Timing is not modelled: a read in flight is as good
// as a slot that holds the expert.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "store/eviction.hpp"

namespace stormo {

class SlotModel {
public:
    SlotModel(size_t slots, int n_layers, int n_experts);

    enum class Request { hit, hit_read_ahead, miss };
    // One expert of the step in progress, placed by `eviction` on a miss; pinned until end_step.
    // The caller tells the policy of the use afterwards (Eviction::on_use), as the store does.
    Request request(int layer, int expert, const Eviction& eviction);
    // A guess for a later step, read into an unpinned slot when the rules allow; true when read.
    bool read_ahead(int layer, int expert, const Eviction& eviction);
    void end_step();

    bool holds(int layer, int expert) const { return find(layer, expert) != kNone; }
    size_t size() const { return slots_.size(); }

private:
    struct Slot {
        int layer = -1;
        int expert = -1;
        bool on_probation = false;
        bool read_ahead_unused = false;
    };
    static constexpr size_t kNone = std::numeric_limits<size_t>::max();

    size_t key(int layer, int expert) const {
        return static_cast<size_t>(layer) * static_cast<size_t>(n_experts_) + static_cast<size_t>(expert);
    }
    size_t find(int layer, int expert) const { return where_[key(layer, expert)]; }
    std::optional<VictimChoice::Placement> choose_place(const Eviction& eviction, int layer, int expert, bool read_ahead);
    void place(size_t s, int layer, int expert, bool on_probation);
    void pin(size_t s);

    int n_experts_;
    std::vector<Slot> slots_;
    std::vector<size_t> where_;
    std::vector<size_t> empty_;
    std::vector<char> pinned_;
    std::vector<size_t> pinned_now_;
};

}  // namespace stormo
