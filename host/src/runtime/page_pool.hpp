#pragma once
// Where sessions' KV pages live: slabs of huge pages cut into page-sized slots. A page taken from
// a 4 KiB mapping costs a fault (and, in a virtual machine, the host's own fault) on its first
// write: on one test machine 66 MiB of fresh 4 KiB pages took 100-200 ms to write the first time
// against 5 ms from a huge-page slab, more than reading a session's file from disk. A slab is
// mapped in one call when it is made and reused for every page it holds after, so prefill, restores
// and loads write into memory that is already there.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "stormo/tensor.hpp"  // AlignedBuffer

namespace stormo {

// Maps [data, data + bytes) now (the whole OS pages inside it) rather than a fault at a time;
// advice only: kernels before 5.14 refuse it and the memory faults in as before.
void map_now(void* data, size_t bytes);

class PagePool {
public:
    // Pages of `page_bytes` each; a slot is rounded up to whole 4 KiB blocks, so no two pages
    // share an OS page.
    explicit PagePool(size_t page_bytes);
    PagePool(const PagePool&) = delete;
    PagePool& operator=(const PagePool&) = delete;

    size_t page_bytes() const { return page_bytes_; }
    size_t slot_bytes() const { return slot_bytes_; }
    size_t slots_per_slab() const { return slots_per_slab_; }
    // A free slot, its bytes as the last holder left them; throws std::bad_alloc as new does.
    // Safe from several threads.
    void* acquire();
    void release(void* slot);
    // Bytes of the slabs mapped now, and the slots handed out.
    uint64_t mapped_bytes() const;
    size_t slots_in_use() const;

private:
    struct Slab {
        AlignedBuffer memory;
        std::vector<void*> free;  // its slots not handed out
    };
    size_t page_bytes_;
    size_t slot_bytes_;
    size_t slots_per_slab_;
    size_t slab_bytes_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<Slab>> slabs_;
    size_t in_use_ = 0;
};

}  // namespace stormo
