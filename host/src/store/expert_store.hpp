#pragma once
// The expert store: the single boundary through which the forward pass gets routed experts'
// bytes. The forward pass never knows whether an expert came from a RAM slot or from disk.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stormo/error.hpp"
#include "stormo/family.hpp"
#include "store/eviction.hpp"
#include "store/read_backend.hpp"
#include "model/model_source.hpp"

namespace stormo {

// Where one expert's part lives in the checkpoint.
struct ExpertPartLocation {
    const TensorInfo* tensor = nullptr;
    uint64_t offset = 0;  // within the tensor's data
    uint64_t nbytes = 0;
    // Where those bytes start in tensor->file when the source said (ModelSource::file_offset: a
    // container stores a tensor stacking every expert as one piece per expert); else they lie at
    // tensor->offset + offset.
    std::optional<uint64_t> file_offset;
    uint64_t file_begin() const { return file_offset ? *file_offset : tensor->offset + offset; }
};

// A layer's experts as the checkpoint stores them: locations[expert][part].
struct ExpertLayerLayout {
    int layer = 0;
    std::vector<ExpertPartDecl> parts;
    std::vector<std::vector<ExpertPartLocation>> locations;
    // One expert's bytes (every expert of a layer has the same parts), from the first one this
    // process holds.
    uint64_t bytes_per_expert() const;
    // The bytes of the experts this process holds: a rank of a distributed run holds its share
    // only, and the others' locations are empty (ExpertSplit, Engine::make_store).
    uint64_t held_bytes() const;
};

struct ExpertStoreStats {
    uint64_t hits = 0;             // acquired experts already in a slot (prefetched ones included)
    uint64_t misses = 0;           // acquired experts read on demand
    uint64_t bytes_read = 0;       // every byte read from disk while running (misses + prefetches)
    double read_wait_seconds = 0.0;  // time the forward pass waited for reads
    // Time at least one read was in flight: bytes_read over it is the rate the store's reads got
    // from the disk while it read, apart from the compute between reads.
    double read_busy_seconds = 0.0;
    uint64_t prefetch_issued = 0;  // experts read ahead on a prediction
    uint64_t prefetch_used = 0;    // of those, acquired before being evicted
    uint64_t prefetch_wasted = 0;  // of those, evicted (or still unused) without being acquired
    uint64_t evictions = 0;
    uint64_t on_probation = 0;     // experts read without displacing a hotter one (eviction.hpp)
    uint64_t loading = 0;          // slots whose reads are still in flight now
    uint64_t slots = 0;            // slots the budget allows
    uint64_t slot_bytes = 0;
    bool direct_io = false;        // O_DIRECT in use (false: buffered reads, said in the stats)
};

// The experts of one acquire, pinned in their slots until the batch is destroyed.
class ExpertBatch {
public:
    virtual ~ExpertBatch() = default;
    virtual size_t size() const = 0;
    // The index (in the requested order) of an expert whose bytes are ready and that next() has
    // not returned before, waiting for a read when none is ready; each index comes once. A failed
    // read is an error naming the file and the expert.
    virtual Expected<size_t> next() = 0;
    virtual const ExpertView& view(size_t index) const = 0;
};

class ExpertStore {
public:
    virtual ~ExpertStore() = default;
    virtual Expected<void> add_layer(ExpertLayerLayout layout) = 0;
    // Called once after the family declared every layer: sizes the slots.
    virtual Expected<void> finish_loading() = 0;
    // Pins the requested experts (hits now, misses as their reads land). At most max_batch()
    // experts per batch, and one batch at a time.
    virtual Expected<std::unique_ptr<ExpertBatch>> acquire(int layer, std::span<const int32_t> experts) = 0;
    virtual size_t max_batch() const = 0;
    // Starts reading experts a later step will likely ask for, into free or cold slots, up to
    // `limit` of them; never evicts a pinned expert. A no-op where everything is resident.
    virtual void prefetch(int layer, std::span<const int32_t> experts, size_t limit) = 0;
    virtual bool streams() const = 0;  // false: every expert resident, nothing to prefetch
    virtual ExpertStoreStats stats() const = 0;
    virtual uint64_t resident_bytes() const = 0;
    virtual uint64_t total_expert_bytes() const = 0;
};

// Every expert read into RAM at load, in its checkpoint format: the "all" budget.
std::unique_ptr<ExpertStore> make_resident_expert_store(const ModelSource& source);

struct StreamingStoreOptions {
    uint64_t budget_bytes = 0;    // RAM for slots
    size_t min_slots = 1;         // the fewest slots a forward step needs (top-k of one layer)
    EvictionSettings eviction;
    size_t io_threads = 4;        // reads in flight
    size_t read_chunk_bytes = 4u << 20;
};

// Experts stay on disk and move through slots within the budget. `backend` reads the bytes
// (tests inject failures through it).
std::unique_ptr<ExpertStore> make_streaming_expert_store(std::unique_ptr<ReadBackend> backend,
                                                         StreamingStoreOptions options);

// The bytes one slot needs for any expert of these layers with the backend's alignment.
uint64_t slot_bytes_for(const std::vector<ExpertLayerLayout>& layers, size_t alignment);

// A streaming budget must afford the slots one token needs in one layer (the largest top-k); the
// store refuses less when it starts, and `inspect` makes the same check with the slot the store
// would make from the family's layouts.
Expected<void> check_budget_minimum(uint64_t budget_bytes, uint64_t slot_bytes, size_t min_slots);

// Resolves a family's declaration against the checkpoint: names, dtypes and shapes checked,
// errors naming the tensor.
Expected<ExpertLayerLayout> resolve_expert_layout(const ModelSource& source, int layer,
                                                  const std::vector<ExpertPartDecl>& parts,
                                                  int n_experts);

}  // namespace stormo
