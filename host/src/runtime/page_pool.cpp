#include "runtime/page_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace stormo {
namespace {

constexpr size_t kSlotAlignment = 4096;
constexpr size_t kHugePageBytes = size_t{2} << 20;  // AlignedBuffer asks for huge pages from this size on
// Slabs are whole huge pages; a slab's slots waste at most this share of it (the slot count is
// chosen for that, up to kMaxSlotsPerSlab).
constexpr size_t kWasteDivisor = 16;
constexpr size_t kMaxSlotsPerSlab = 64;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

void map_now(void* data, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    const auto os_page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + os_page - 1) / os_page * os_page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / os_page * os_page;
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
    (void)data;
    (void)bytes;
#endif
}

PagePool::PagePool(size_t page_bytes)
    : page_bytes_(std::max<size_t>(1, page_bytes)), slot_bytes_(round_up(page_bytes_, kSlotAlignment)) {
    size_t slots = 1;
    while (slots < kMaxSlotsPerSlab) {
        const size_t slab = round_up(slots * slot_bytes_, kHugePageBytes);
        if ((slab - slots * slot_bytes_) * kWasteDivisor <= slab) break;
        ++slots;
    }
    slab_bytes_ = round_up(slots * slot_bytes_, kHugePageBytes);
    slots_per_slab_ = slab_bytes_ / slot_bytes_;
}

void* PagePool::acquire() {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(slabs_.begin(), slabs_.end(), [](const auto& slab) { return !slab->free.empty(); });
    if (it == slabs_.end()) {
        auto slab = std::make_unique<Slab>();
        slab->memory = AlignedBuffer(slab_bytes_, kHugePageBytes);  // huge pages where the kernel has them
        map_now(slab->memory.data(), slab_bytes_);
        // Handed out from the slab's start, so a short session touches one end of it.
        for (size_t s = slots_per_slab_; s-- > 0;) slab->free.push_back(slab->memory.data() + s * slot_bytes_);
        slabs_.push_back(std::move(slab));
        it = std::prev(slabs_.end());
    }
    void* slot = (*it)->free.back();
    (*it)->free.pop_back();
    ++in_use_;
    return slot;
}

void PagePool::release(void* slot) {
    if (slot == nullptr) return;
    std::lock_guard lock(mutex_);
    const auto* byte = static_cast<const std::byte*>(slot);
    auto it = std::find_if(slabs_.begin(), slabs_.end(), [&](const auto& slab) {
        return byte >= slab->memory.data() && byte < slab->memory.data() + slab_bytes_;
    });
    if (it == slabs_.end()) return;
    (*it)->free.push_back(slot);
    --in_use_;
    if ((*it)->free.size() < slots_per_slab_) return;
    // A slab with nothing handed out goes back to the system, unless it is the only empty one:
    // a session that rewinds and grows again across a slab's edge must not map it every time.
    const size_t empty = static_cast<size_t>(std::count_if(slabs_.begin(), slabs_.end(), [&](const auto& slab) {
        return slab->free.size() == slots_per_slab_;
    }));
    if (empty > 1) slabs_.erase(it);
}

uint64_t PagePool::mapped_bytes() const {
    std::lock_guard lock(mutex_);
    return static_cast<uint64_t>(slabs_.size()) * slab_bytes_;
}

size_t PagePool::slots_in_use() const {
    std::lock_guard lock(mutex_);
    return in_use_;
}

}  // namespace stormo
