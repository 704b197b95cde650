// Experts on disk, moving through a fixed set of RAM slots within a byte budget.
//
// A slot holds one expert: its parts as they lie in the file, one aligned read per run of parts
// close together (store/expert_reads.hpp: one for a container's expert), read with the backend
// (O_DIRECT where possible) by a few I/O threads, in chunks, so several reads are in flight. Acquired experts
// are pinned until their batch ends; a slot that is loading is never evicted. Prefetches fill free
// or cold slots directly (no second copy) and never evict a pinned expert or another prefetch that
// has not been used yet.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "store/expert_reads.hpp"
#include "store/expert_store.hpp"
#include "util/format_bytes.hpp"

namespace stormo {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

class StreamingStore;

enum class SlotState { empty, loading, ready };

struct Slot {
    std::byte* base = nullptr;
    int layer = -1;        // model layer, -1 when empty
    int layer_index = -1;  // its index among the layers with experts (the eviction's and slot_of_'s key)
    int expert = -1;
    SlotState state = SlotState::empty;
    int pins = 0;
    int pending_reads = 0;
    bool failed = false;
    std::string error;
    bool prefetched_unused = false;
    bool on_probation = false;  // read without displacing a hotter expert: leaves first (eviction.hpp)
    ExpertView view;
};

struct ReadJob {
    size_t slot = 0;
    const std::string* file = nullptr;
    uint64_t offset = 0;
    uint64_t size = 0;
    uint64_t needed = 0;  // the read must return at least this many bytes
    std::byte* dst = nullptr;
};

class StreamingBatch final : public ExpertBatch {
public:
    StreamingBatch(StreamingStore& store, std::vector<size_t> slots)
        : store_(store), slots_(std::move(slots)), taken_(slots_.size(), false) {}
    ~StreamingBatch() override;
    size_t size() const override { return slots_.size(); }
    Expected<size_t> next() override;
    const ExpertView& view(size_t index) const override;

private:
    StreamingStore& store_;
    std::vector<size_t> slots_;
    std::vector<bool> taken_;
};

class StreamingStore final : public ExpertStore {
public:
    StreamingStore(std::unique_ptr<ReadBackend> backend, StreamingStoreOptions options)
        : backend_(std::move(backend)), options_(std::move(options)) {}

    ~StreamingStore() override {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
            jobs_.clear();
        }
        io_cv_.notify_all();
        for (auto& t : io_threads_) t.join();
    }

    Expected<void> add_layer(ExpertLayerLayout layout) override {
        if (layouts_.count(layout.layer))
            return fail(ErrorKind::internal, "experts of layer " + std::to_string(layout.layer) + " declared twice");
        const int n = static_cast<int>(layout.locations.size());
        if (n_experts_ != 0 && n != n_experts_)
            return fail(ErrorKind::unsupported, "layer " + std::to_string(layout.layer) + " has " + std::to_string(n) +
                                                    " experts, earlier layers " + std::to_string(n_experts_) +
                                                    ": the streaming store needs one expert count");
        n_experts_ = n;
        layer_index_[layout.layer] = static_cast<int>(layouts_.size());
        total_bytes_ += layout.held_bytes();
        layouts_.emplace(layout.layer, std::move(layout));
        return {};
    }

    Expected<void> finish_loading() override {
        const uint64_t alignment = backend_->alignment();
        std::vector<ExpertLayerLayout> all;
        for (const auto& [layer, layout] : layouts_) all.push_back(layout);
        slot_bytes_ = slot_bytes_for(all, alignment);
        if (slot_bytes_ == 0) return fail(ErrorKind::internal, "the streaming store has no experts to serve");
        const uint64_t total_experts = static_cast<uint64_t>(n_experts_) * layouts_.size();
        const uint64_t affordable = options_.budget_bytes / slot_bytes_;
        STORMO_TRY(check_budget_minimum(options_.budget_bytes, slot_bytes_, options_.min_slots));
        const size_t n_slots = static_cast<size_t>(std::min(affordable, total_experts));
        arena_ = AlignedBuffer(static_cast<size_t>(n_slots * slot_bytes_), std::max<size_t>(alignment, 64));
        slots_.resize(n_slots);
        for (size_t s = 0; s < n_slots; ++s) slots_[s].base = arena_.data() + s * slot_bytes_;
        slot_of_.assign(static_cast<size_t>(total_experts), -1);
        eviction_ = make_eviction(options_.eviction, n_slots, static_cast<int>(layouts_.size()), n_experts_);
        for (size_t t = 0; t < std::max<size_t>(1, options_.io_threads); ++t) io_threads_.emplace_back([this] { io_loop(); });
        return {};
    }

    Expected<std::unique_ptr<ExpertBatch>> acquire(int layer, std::span<const int32_t> experts) override {
        std::unique_lock lock(mu_);
        auto li = layer_index_.find(layer);
        if (li == layer_index_.end())
            return fail(ErrorKind::internal, "layer " + std::to_string(layer) + " has no experts in the store");
        if (experts.size() > slots_.size())
            return fail(ErrorKind::internal, "expert store: " + std::to_string(experts.size()) +
                                                 " experts asked at once, only " + std::to_string(slots_.size()) + " slots");
        eviction_->on_layer_step(li->second);
        std::vector<size_t> batch;
        batch.reserve(experts.size());
        for (int32_t e : experts) {
            if (e < 0 || e >= n_experts_)
                return fail(ErrorKind::internal, "layer " + std::to_string(layer) + ": expert " + std::to_string(e) + " does not exist");
            int32_t& mapped = slot_of_[key(li->second, e)];
            // A slot whose read failed keeps its mapping until its last chunk lands; then it is
            // forgotten and this request reads the expert again.
            while (mapped >= 0 && slots_[static_cast<size_t>(mapped)].failed) done_cv_.wait(lock);
            if (mapped >= 0) {
                Slot& slot = slots_[static_cast<size_t>(mapped)];
                ++slot.pins;
                ++stats_.hits;
                slot.on_probation = false;  // used again: it earned its place
                if (slot.prefetched_unused) {
                    slot.prefetched_unused = false;
                    ++stats_.prefetch_used;
                }
                batch.push_back(static_cast<size_t>(mapped));
            } else {
                auto place = take_victim(lock, /*for_prefetch=*/false, li->second, e);
                if (!place) {
                    for (size_t s : batch) --slots_[s].pins;
                    return tl::unexpected(place.error());
                }
                assign(*place, layer, li->second, e, /*pinned=*/true);
                ++stats_.misses;
                batch.push_back(place->slot);
            }
            eviction_->on_use(li->second, e);
        }
        lock.unlock();
        io_cv_.notify_all();
        return std::unique_ptr<ExpertBatch>(std::make_unique<StreamingBatch>(*this, std::move(batch)));
    }

    size_t max_batch() const override { return slots_.size(); }

    void prefetch(int layer, std::span<const int32_t> experts, size_t limit) override {
        std::unique_lock lock(mu_);
        auto li = layer_index_.find(layer);
        if (li == layer_index_.end()) return;
        size_t issued = 0;
        for (int32_t e : experts) {
            if (issued >= limit) break;
            if (e < 0 || e >= n_experts_ || slot_of_[key(li->second, e)] >= 0) continue;
            auto place = take_victim(lock, /*for_prefetch=*/true, li->second, e);
            if (!place) continue;  // no free place, or a guess too cold to take a cached expert's
            assign(*place, layer, li->second, e, /*pinned=*/false);
            slots_[place->slot].prefetched_unused = true;
            ++stats_.prefetch_issued;
            ++issued;
        }
        lock.unlock();
        if (issued) io_cv_.notify_all();
    }

    bool streams() const override { return true; }

    ExpertStoreStats stats() const override {
        std::lock_guard lock(mu_);
        ExpertStoreStats s = stats_;
        if (reads_in_flight_ > 0)
            s.read_busy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
        for (const Slot& slot : slots_) {
            if (slot.prefetched_unused) ++s.prefetch_wasted;
            if (slot.state == SlotState::loading) ++s.loading;
        }
        s.slots = slots_.size();
        s.slot_bytes = slot_bytes_;
        s.direct_io = backend_->direct_io();
        return s;
    }
    uint64_t resident_bytes() const override { return arena_.size(); }
    uint64_t total_expert_bytes() const override { return total_bytes_; }

    // Batch support, under the lock.
    Expected<size_t> next_ready(const std::vector<size_t>& slots, std::vector<bool>& taken) {
        std::unique_lock lock(mu_);
        const auto t0 = std::chrono::steady_clock::now();
        bool waited = false;
        for (;;) {
            bool any_left = false;
            for (size_t i = 0; i < slots.size(); ++i) {
                if (taken[i]) continue;
                any_left = true;
                const Slot& slot = slots_[slots[i]];
                if (slot.failed && slot.state != SlotState::loading) {
                    taken[i] = true;
                    return fail(ErrorKind::io, slot.error);
                }
                if (slot.state == SlotState::ready) {
                    taken[i] = true;
                    if (waited) stats_.read_wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                    return i;
                }
            }
            if (!any_left) return fail(ErrorKind::internal, "expert batch: every expert was already taken");
            waited = true;
            done_cv_.wait(lock);
        }
    }
    const ExpertView& view_of(size_t slot) const { return slots_[slot].view; }
    void unpin(const std::vector<size_t>& slots) {
        std::lock_guard lock(mu_);
        for (size_t s : slots) --slots_[s].pins;
    }

private:
    size_t key(int layer_index, int expert) const {
        return static_cast<size_t>(layer_index) * static_cast<size_t>(n_experts_) + static_cast<size_t>(expert);
    }

    // The slot to fill next for expert (layer_index, expert): an empty one, else the place
    // VictimChoice picks among the unpinned ready ones (emptied here). An acquire waits for
    // prefetches in flight to land when nothing else is free; a prefetch never waits and never
    // evicts another unused prefetch.
    Expected<VictimChoice::Placement> take_victim(std::unique_lock<std::mutex>& lock, bool for_prefetch, int layer_index,
                                                  int expert) {
        for (;;) {
            VictimChoice choice(*eviction_, for_prefetch);
            bool loading_unpinned = false;
            for (size_t s = 0; s < slots_.size(); ++s) {
                const Slot& slot = slots_[s];
                if (slot.pins > 0) continue;
                if (slot.state == SlotState::loading) {
                    loading_unpinned = true;
                    continue;
                }
                if (slot.state == SlotState::empty) return VictimChoice::Placement{s, false};
                if (for_prefetch && slot.prefetched_unused) continue;
                choice.offer(s, slot.layer_index, slot.expert, slot.on_probation);
            }
            if (auto place = choice.choose(layer_index, expert)) {
                evict(place->slot);
                return *place;
            }
            if (for_prefetch || !loading_unpinned)
                return fail(ErrorKind::resource, "expert store: no slot is free (" + std::to_string(slots_.size()) +
                                                     " slots, all pinned)");
            done_cv_.wait(lock);
        }
    }

    void evict(size_t s) {
        Slot& slot = slots_[s];
        if (slot.layer < 0) return;
        if (slot.prefetched_unused) ++stats_.prefetch_wasted;
        ++stats_.evictions;
        forget(slot);
    }

    // Unmaps the slot's expert: the next request for it reads it again.
    void forget(Slot& slot) {
        slot_of_[key(slot.layer_index, slot.expert)] = -1;
        slot.layer = -1;
        slot.layer_index = -1;
        slot.expert = -1;
        slot.prefetched_unused = false;
        slot.on_probation = false;
        slot.state = SlotState::empty;
    }

    void assign(VictimChoice::Placement place, int layer, int layer_index, int expert, bool pinned) {
        const size_t s = place.slot;
        Slot& slot = slots_[s];
        slot.on_probation = place.on_probation;
        if (place.on_probation) ++stats_.on_probation;
        const ExpertLayerLayout& layout = layouts_.at(layer);
        const auto& locations = layout.locations[static_cast<size_t>(expert)];
        const ExpertReadPlan plan = plan_expert_reads(locations, backend_->alignment());
        slot.layer = layer;
        slot.layer_index = layer_index;
        slot.expert = expert;
        slot.state = SlotState::loading;
        slot.pins = pinned ? 1 : 0;
        slot.failed = false;
        slot.error.clear();
        slot.prefetched_unused = false;
        slot.view.layer = layer;
        slot.view.expert = expert;
        slot.view.parts.clear();
        slot.pending_reads = 0;
        for (size_t p = 0; p < locations.size(); ++p)
            slot.view.parts.push_back({locations[p].tensor->dtype, layout.parts[p].expert_shape, slot.base + plan.part_offsets[p]});
        // A read larger than a chunk is split so several I/O threads share it.
        const uint64_t chunk = align_up(std::max<uint64_t>(options_.read_chunk_bytes, 1), backend_->alignment());
        for (const ExpertRead& read : plan.reads) {
            for (uint64_t at = 0; at < read.span; at += chunk) {
                ReadJob job;
                job.slot = s;
                job.file = read.file;
                job.offset = read.file_begin + at;
                job.size = std::min(chunk, read.span - at);
                job.needed = read.needed > at ? std::min(job.size, read.needed - at) : 0;
                job.dst = slot.base + read.slot_offset + at;
                jobs_.push_back(job);
                ++slot.pending_reads;
            }
        }
        slot_of_[key(layer_index, expert)] = static_cast<int32_t>(s);
    }

    void io_loop() {
        for (;;) {
            ReadJob job;
            {
                std::unique_lock lock(mu_);
                io_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
                if (stopping_) return;
                job = jobs_.front();
                jobs_.pop_front();
                if (reads_in_flight_++ == 0) busy_since_ = std::chrono::steady_clock::now();
            }
            auto got = backend_->read(*job.file, job.offset, static_cast<size_t>(job.size), job.dst);
            std::lock_guard lock(mu_);
            if (--reads_in_flight_ == 0)
                stats_.read_busy_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
            Slot& slot = slots_[job.slot];
            if (!got) {
                record_failure(slot, got.error().message);
            } else {
                stats_.bytes_read += *got;
                if (*got < job.needed)
                    record_failure(slot, *job.file + ": short read at offset " + std::to_string(job.offset) + ": " +
                                             std::to_string(*got) + " of " + std::to_string(job.needed) + " bytes");
            }
            if (--slot.pending_reads == 0) {
                if (slot.failed) {
                    forget(slot);  // the expert is not in RAM
                } else {
                    slot.state = SlotState::ready;
                }
                done_cv_.notify_all();
            }
        }
    }

    void record_failure(Slot& slot, const std::string& message) {
        if (!slot.failed)
            slot.error = "layer " + std::to_string(slot.layer) + " expert " + std::to_string(slot.expert) + ": " + message;
        slot.failed = true;
    }

    std::unique_ptr<ReadBackend> backend_;
    StreamingStoreOptions options_;
    std::map<int, ExpertLayerLayout> layouts_;
    std::map<int, int> layer_index_;  // model layer -> dense index of layers with experts
    int n_experts_ = 0;
    uint64_t total_bytes_ = 0;
    uint64_t slot_bytes_ = 0;

    mutable std::mutex mu_;
    size_t reads_in_flight_ = 0;                         // guarded by mu_
    std::chrono::steady_clock::time_point busy_since_;  // when reads_in_flight_ last left 0
    std::condition_variable io_cv_;    // jobs queued or stopping
    std::condition_variable done_cv_;  // a slot finished loading
    AlignedBuffer arena_;
    std::vector<Slot> slots_;
    std::vector<int32_t> slot_of_;
    std::unique_ptr<Eviction> eviction_;
    std::deque<ReadJob> jobs_;
    bool stopping_ = false;
    ExpertStoreStats stats_;
    std::vector<std::thread> io_threads_;
};

StreamingBatch::~StreamingBatch() { store_.unpin(slots_); }
Expected<size_t> StreamingBatch::next() { return store_.next_ready(slots_, taken_); }
const ExpertView& StreamingBatch::view(size_t index) const { return store_.view_of(slots_[index]); }

}  // namespace

Expected<void> check_budget_minimum(uint64_t budget_bytes, uint64_t slot_bytes, size_t min_slots) {
    if (slot_bytes == 0 || budget_bytes / slot_bytes >= min_slots) return {};
    return fail(ErrorKind::resource, "expert budget of " + format_bytes(budget_bytes) + " is below the minimum of " +
                                         format_bytes(min_slots * slot_bytes) + " (" + std::to_string(min_slots) +
                                         " slots of " + format_bytes(slot_bytes) +
                                         ": the experts one token needs in one layer)");
}

uint64_t slot_bytes_for(const std::vector<ExpertLayerLayout>& layers, size_t alignment) {
    uint64_t worst = 0;
    for (const auto& layout : layers)
        for (const auto& expert : layout.locations)
            worst = std::max(worst, plan_expert_reads(expert, alignment).slot_bytes);
    return worst;
}

std::unique_ptr<ExpertStore> make_streaming_expert_store(std::unique_ptr<ReadBackend> backend,
                                                         StreamingStoreOptions options) {
    return std::make_unique<StreamingStore>(std::move(backend), std::move(options));
}

}  // namespace stormo
