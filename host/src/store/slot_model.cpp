#include "store/slot_model.hpp"

namespace stormo {

SlotModel::SlotModel(size_t slots, int n_layers, int n_experts)
    : n_experts_(n_experts), slots_(slots), where_(static_cast<size_t>(n_layers) * static_cast<size_t>(n_experts), kNone),
      pinned_(slots, 0) {
    for (size_t s = slots; s > 0; --s) empty_.push_back(s - 1);
}

SlotModel::Request SlotModel::request(int layer, int expert, const Eviction& eviction) {
    const size_t found = find(layer, expert);
    if (found != kNone) {
        Slot& slot = slots_[found];
        slot.on_probation = false;  // used again: it earned its place
        const bool was_read_ahead = slot.read_ahead_unused;
        slot.read_ahead_unused = false;
        pin(found);
        return was_read_ahead ? Request::hit_read_ahead : Request::hit;
    }
    // None: more experts than slots in one step, this one is not cached.
    if (auto p = choose_place(eviction, layer, expert, false)) {
        place(p->slot, layer, expert, p->on_probation);
        pin(p->slot);
    }
    return Request::miss;
}

bool SlotModel::read_ahead(int layer, int expert, const Eviction& eviction) {
    if (holds(layer, expert)) return false;
    auto p = choose_place(eviction, layer, expert, true);
    if (!p) return false;
    place(p->slot, layer, expert, p->on_probation);
    slots_[p->slot].read_ahead_unused = true;
    return true;
}

void SlotModel::end_step() {
    for (size_t s : pinned_now_) pinned_[s] = 0;
    pinned_now_.clear();
}

// An empty slot, else the place VictimChoice picks among the slots not pinned (and, for a read
// ahead, not holding another unused one), as the streaming store's take_victim does.
std::optional<VictimChoice::Placement> SlotModel::choose_place(const Eviction& eviction, int layer, int expert, bool read_ahead) {
    if (!empty_.empty()) {
        const size_t s = empty_.back();
        empty_.pop_back();
        return VictimChoice::Placement{s, false};
    }
    VictimChoice choice(eviction, read_ahead);
    for (size_t s = 0; s < slots_.size(); ++s) {
        const Slot& slot = slots_[s];
        if (pinned_[s] || (read_ahead && slot.read_ahead_unused)) continue;
        choice.offer(s, slot.layer, slot.expert, slot.on_probation);
    }
    return choice.choose(layer, expert);
}

void SlotModel::place(size_t s, int layer, int expert, bool on_probation) {
    Slot& slot = slots_[s];
    if (slot.layer >= 0) where_[key(slot.layer, slot.expert)] = kNone;
    slot = Slot{layer, expert, on_probation, false};
    where_[key(layer, expert)] = s;
}

void SlotModel::pin(size_t s) {
    if (pinned_[s]) return;
    pinned_[s] = 1;
    pinned_now_.push_back(s);
}

}  // namespace stormo
