// The streaming store behind a slow, unreliable disk: a fake read backend serves a synthetic
// checkpoint from memory, sleeps a few hundred microseconds per read and fails a share of reads.
// The test drives acquire and prefetch rounds over random expert sets, with a budget that forces
// evictions, small read chunks and several I/O threads, and checks that every expert handed out
// holds exactly its bytes, that a failed read fails only the acquire that asked for that expert
// (naming the file and the expert), that the store serves that expert again afterwards, and that
// the counters add up. stormo_store_tsan_tests builds this file with the store's sources under
// -fsanitize=thread, so a data race in the store fails the test too.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store/expert_store.hpp"

namespace stormo {
namespace {

constexpr int kLayers = 3;
constexpr int kExperts = 8;
constexpr size_t kAlignment = 4096;
// Deliberately unaligned sizes and offsets: parts start and end mid-block, and the last part of
// each file ends mid-block, so the store's aligned reads stop short at the end of the file.
constexpr uint64_t kPartBytes[] = {3000, 9001, 517};
constexpr size_t kParts = std::size(kPartBytes);
constexpr uint64_t kFileHeader = 123;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// kLayers layers of kParts fused tensors (kExperts slices each); even layers in one file, odd in
// the other. Byte o of file f is a function of (f, o), so any expert's bytes can be checked.
struct FakeCheckpoint {
    std::vector<std::string> files{"/fake/experts-even.bin", "/fake/experts-odd.bin"};
    std::vector<std::vector<std::byte>> contents;
    std::deque<TensorInfo> tensors;  // a deque: the layouts point into it
    std::vector<ExpertLayerLayout> layouts;

    FakeCheckpoint() {
        std::vector<uint64_t> size(files.size(), kFileHeader);
        for (int layer = 0; layer < kLayers; ++layer) {
            const size_t f = static_cast<size_t>(layer) % files.size();
            ExpertLayerLayout layout;
            layout.layer = layer;
            layout.locations.assign(kExperts, {});
            for (size_t p = 0; p < kParts; ++p) {
                const std::string name = "layers." + std::to_string(layer) + ".part" + std::to_string(p);
                const Shape expert_shape{static_cast<int64_t>(kPartBytes[p])};
                tensors.push_back(TensorInfo{name, DType::U8, {kExperts, expert_shape[0]}, files[f], size[f],
                                             kExperts * kPartBytes[p]});
                size[f] += kExperts * kPartBytes[p];
                layout.parts.push_back(ExpertPartDecl{"part" + std::to_string(p), name, true, {DType::U8}, expert_shape});
                for (int e = 0; e < kExperts; ++e)
                    layout.locations[static_cast<size_t>(e)].push_back({&tensors.back(), kPartBytes[p] * static_cast<uint64_t>(e), kPartBytes[p], std::nullopt});
            }
            layouts.push_back(std::move(layout));
        }
        for (size_t f = 0; f < files.size(); ++f) {
            contents.emplace_back(size[f]);
            for (uint64_t o = 0; o < size[f]; ++o) contents[f][o] = static_cast<std::byte>(mix(f << 40 | o) & 0xff);
        }
    }

    const std::string& file_of(int layer) const { return files[static_cast<size_t>(layer) % files.size()]; }
    const std::byte* bytes_of(int layer, int expert, size_t part) const {
        const ExpertPartLocation& at = layouts[static_cast<size_t>(layer)].locations[static_cast<size_t>(expert)][part];
        return contents[static_cast<size_t>(layer) % files.size()].data() + at.tensor->offset + at.offset;
    }
};

// Serves the checkpoint from memory like an O_DIRECT disk: aligned reads only, short at the end
// of a file, 100-500 us each, and a failure for about fail_per_mille reads in a thousand. The
// random draws hash a relaxed counter instead of sharing a locked generator: a lock here would
// order the I/O threads and could hide a race in the store from ThreadSanitizer.
class FlakyMemoryBackend final : public ReadBackend {
public:
    FlakyMemoryBackend(const FakeCheckpoint& checkpoint, uint64_t seed, unsigned fail_per_mille)
        : checkpoint_(checkpoint), seed_(seed), fail_per_mille_(fail_per_mille) {}

    Expected<size_t> read(const std::string& file, uint64_t offset, size_t size, void* dst) override {
        const uint64_t draw = mix(seed_ ^ mix(calls_.fetch_add(1, std::memory_order_relaxed)));
        std::this_thread::sleep_for(std::chrono::microseconds(100 + draw % 400));
        const auto f = std::find(checkpoint_.files.begin(), checkpoint_.files.end(), file);
        if (f == checkpoint_.files.end()) return fail(ErrorKind::io, file + ": no such file");
        if (offset % kAlignment || size % kAlignment || reinterpret_cast<uintptr_t>(dst) % kAlignment)
            return fail(ErrorKind::internal, file + ": unaligned direct read at offset " + std::to_string(offset));
        if (failing_.load(std::memory_order_relaxed) && (draw >> 32) % 1000 < fail_per_mille_) {
            failures_.fetch_add(1, std::memory_order_relaxed);
            return fail(ErrorKind::io, file + ": injected read failure at offset " + std::to_string(offset));
        }
        const auto& bytes = checkpoint_.contents[static_cast<size_t>(f - checkpoint_.files.begin())];
        const size_t n = offset >= bytes.size() ? 0 : std::min<size_t>(size, bytes.size() - offset);
        std::memcpy(dst, bytes.data() + offset, n);
        return n;
    }
    bool direct_io() const override { return true; }
    size_t alignment() const override { return kAlignment; }

    // The store's lock orders this before any read its later acquires queue.
    void stop_failing() { failing_.store(false, std::memory_order_relaxed); }
    uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }
    uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }

private:
    const FakeCheckpoint& checkpoint_;
    uint64_t seed_;
    unsigned fail_per_mille_;
    std::atomic<uint64_t> calls_{0};
    std::atomic<uint64_t> failures_{0};
    std::atomic<bool> failing_{true};
};

uint64_t seed_from_environment() {
    if (const char* s = std::getenv("STORMO_STORE_FAULTS_SEED")) return std::strtoull(s, nullptr, 10);
    return 20261201;
}

std::vector<int32_t> random_experts(std::mt19937_64& rng, size_t k) {
    std::vector<int32_t> all(kExperts);
    for (int e = 0; e < kExperts; ++e) all[static_cast<size_t>(e)] = e;
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(k);
    std::sort(all.begin(), all.end());  // the pipeline asks in ascending order
    return all;
}

// Empty when the view holds exactly the expert's bytes, else what is wrong.
std::string check_view(const ExpertView& view, int layer, int expert, const FakeCheckpoint& checkpoint) {
    const std::string who = "layer " + std::to_string(layer) + " expert " + std::to_string(expert);
    if (view.layer != layer || view.expert != expert)
        return who + ": the view is of layer " + std::to_string(view.layer) + " expert " + std::to_string(view.expert);
    if (view.parts.size() != kParts) return who + ": " + std::to_string(view.parts.size()) + " parts";
    for (size_t p = 0; p < kParts; ++p) {
        const ExpertPart& part = view.parts[p];
        if (part.dtype != DType::U8 || part.shape != Shape{static_cast<int64_t>(kPartBytes[p])})
            return who + ": part " + std::to_string(p) + " has the wrong dtype or shape";
        if (std::memcmp(part.data, checkpoint.bytes_of(layer, expert, p), kPartBytes[p]) != 0)
            return who + ": part " + std::to_string(p) + " holds the wrong bytes";
    }
    return {};
}

struct RunCounts {
    uint64_t acquired = 0;  // experts asked for in successful acquires
    uint64_t served = 0;    // experts whose bytes were handed out (and checked)
    uint64_t failed = 0;    // experts whose acquire failed on a read
};

void run_rounds(EvictionPolicy policy, uint64_t seed) {
    SCOPED_TRACE(std::string("policy ") + eviction_policy_name(policy) + ", seed " + std::to_string(seed) +
                 " (set STORMO_STORE_FAULTS_SEED to rerun)");
    std::printf("[ streaming store faults ] policy %s seed %llu\n", eviction_policy_name(policy),
                static_cast<unsigned long long>(seed));
    const FakeCheckpoint checkpoint;
    auto backend = std::make_unique<FlakyMemoryBackend>(checkpoint, seed, 40);  // 4% of reads fail
    FlakyMemoryBackend& reads = *backend;
    constexpr size_t kSlots = 6;  // of 24 experts: most acquires evict
    StreamingStoreOptions options;
    options.budget_bytes = kSlots * slot_bytes_for(checkpoint.layouts, kAlignment);
    options.min_slots = 2;
    options.eviction = EvictionSettings{policy, 0.9};
    options.io_threads = 3;
    options.read_chunk_bytes = kAlignment;  // each part in several reads, in flight together
    auto store = make_streaming_expert_store(std::move(backend), options);
    const auto started = std::chrono::steady_clock::now();
    for (const auto& layout : checkpoint.layouts) ASSERT_TRUE(store->add_layer(layout).has_value());
    auto loaded = store->finish_loading();
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
    ASSERT_EQ(store->max_batch(), kSlots);

    // Another thread reads the stats while the store works, as a monitor would: they only grow.
    std::atomic<uint64_t> shrank{0};
    std::jthread monitor([&](std::stop_token stop) {
        ExpertStoreStats last;
        while (!stop.stop_requested()) {
            const ExpertStoreStats s = store->stats();
            if (s.hits + s.misses < last.hits + last.misses || s.bytes_read < last.bytes_read || s.evictions < last.evictions ||
                s.read_busy_seconds < last.read_busy_seconds)
                shrank.fetch_add(1, std::memory_order_relaxed);
            last = s;
            std::this_thread::sleep_for(std::chrono::microseconds(300));
        }
    });

    std::mt19937_64 rng(seed);
    RunCounts counts;
    std::set<std::pair<int, int>> failed_experts;
    constexpr int kRounds = 150;
    for (int round = 0; round < kRounds; ++round) {
        // Mostly the next layer, like a forward pass; sometimes a jump.
        const int layer = rng() % 4 == 0 ? static_cast<int>(rng() % kLayers) : round % kLayers;
        const auto experts = random_experts(rng, 1 + rng() % 4);
        auto batch = store->acquire(layer, experts);
        ASSERT_TRUE(batch.has_value()) << "round " << round << ": " << batch.error().message;
        counts.acquired += experts.size();
        // While this layer's reads land, guess the next layer's experts, as the pipeline does.
        store->prefetch((layer + 1) % kLayers, random_experts(rng, 1 + rng() % 3), kSlots - experts.size());

        std::vector<bool> done(experts.size(), false);
        for (size_t i = 0; i < experts.size(); ++i) {
            auto ready = (*batch)->next();
            if (ready) {
                ASSERT_LT(*ready, experts.size());
                ASSERT_FALSE(done[*ready]) << "round " << round << ": index " << *ready << " came twice";
                done[*ready] = true;
                const std::string wrong = check_view((*batch)->view(*ready), layer, experts[*ready], checkpoint);
                ASSERT_TRUE(wrong.empty()) << "round " << round << ": " << wrong;
                ++counts.served;
                continue;
            }
            // The error names one of this batch's experts not handed out yet, and its file.
            const std::string& message = ready.error().message;
            EXPECT_EQ(ready.error().kind, ErrorKind::io) << message;
            EXPECT_NE(message.find(checkpoint.file_of(layer)), std::string::npos) << message;
            EXPECT_NE(message.find("injected read failure"), std::string::npos) << message;
            size_t named = experts.size();
            for (size_t j = 0; j < experts.size(); ++j)
                if (!done[j] && message.find("layer " + std::to_string(layer) + " expert " + std::to_string(experts[j]) + ":") !=
                                    std::string::npos)
                    named = j;
            ASSERT_LT(named, experts.size()) << "round " << round << ": the error names no pending expert: " << message;
            done[named] = true;
            failed_experts.insert({layer, experts[named]});
            ++counts.failed;
        }
        EXPECT_FALSE((*batch)->next().has_value()) << "round " << round << ": more experts than were asked for";
    }

    // Reads behave from now on: every expert that failed is served, with its bytes.
    reads.stop_failing();
    for (const auto& [layer, expert] : failed_experts) {
        const int32_t one[1] = {expert};
        auto batch = store->acquire(layer, one);
        ASSERT_TRUE(batch.has_value()) << batch.error().message;
        ++counts.acquired;
        auto ready = (*batch)->next();
        ASSERT_TRUE(ready.has_value()) << "layer " << layer << " expert " << expert
                                       << " after its failed read: " << ready.error().message;
        const std::string wrong = check_view((*batch)->view(*ready), layer, expert, checkpoint);
        ASSERT_TRUE(wrong.empty()) << "after its failed read: " << wrong;
        ++counts.served;
    }
    monitor.request_stop();
    monitor.join();

    const ExpertStoreStats s = store->stats();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("[ streaming store faults ] %llu reads (%llu failed), %llu experts served, %llu failed; "
                "hits %llu misses %llu evictions %llu prefetch %llu issued %llu used\n",
                static_cast<unsigned long long>(reads.calls()), static_cast<unsigned long long>(reads.failures()),
                static_cast<unsigned long long>(counts.served), static_cast<unsigned long long>(counts.failed),
                static_cast<unsigned long long>(s.hits), static_cast<unsigned long long>(s.misses),
                static_cast<unsigned long long>(s.evictions), static_cast<unsigned long long>(s.prefetch_issued),
                static_cast<unsigned long long>(s.prefetch_used));
    EXPECT_EQ(s.hits + s.misses, counts.acquired);
    EXPECT_EQ(counts.served + counts.failed, counts.acquired);
    EXPECT_LE(s.prefetch_used + s.prefetch_wasted, s.prefetch_issued);
    EXPECT_LE(counts.failed, reads.failures()) << "an acquire failed without a failed read";
    EXPECT_EQ(shrank.load(), 0u) << "the stats went backwards";
    // The time a read was in flight: every read sleeps 100 us at least, at most io_threads at once,
    // and it all happened within the run.
    EXPECT_GE(s.read_busy_seconds, static_cast<double>(reads.calls()) * 100e-6 / static_cast<double>(options.io_threads));
    EXPECT_LE(s.read_busy_seconds, wall);
    // The run exercised what it is meant to: hits, misses, evictions, prefetches and failures.
    EXPECT_GT(s.hits, 0u);
    EXPECT_GT(s.misses, 0u);
    EXPECT_GT(s.evictions, 0u);
    EXPECT_GT(s.prefetch_used, 0u);
    EXPECT_GT(counts.failed, 0u);
}

TEST(StreamingStoreFaults, SlowFlakyReadsFailOnlyTheirExpertAndNeverCorruptOne) {
    const uint64_t seed = seed_from_environment();
    run_rounds(EvictionPolicy::hotness, seed);
    run_rounds(EvictionPolicy::lru, seed + 1);
    run_rounds(EvictionPolicy::next_use, seed + 2);
    run_rounds(EvictionPolicy::adaptive, seed + 3);
}

}  // namespace
}  // namespace stormo
