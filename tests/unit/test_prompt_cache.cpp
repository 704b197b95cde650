// The prompt cache: a prefix computed in one session, captured block by block and restored into
// another (from memory, from the disk, from the disk after a restart, into rings of another size,
// past a prefix the session already holds) continues with the logits bits of one session that
// never stopped, for every fixture and demo, and after a rewind in the session that captured it;
// and the cache's guards: a corrupted, truncated or foreign block is dropped and counted and is a
// miss, partitions do not see each other's blocks, the size cap evicts the least recently used
// (across a restart), a crash's temporary files go at open, a write that fails is counted and
// changes nothing else.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "oracle_support.hpp"
#include "runtime/engine_identity.hpp"
#include "runtime/generation.hpp"
#include "runtime/prompt_cache.hpp"
#include "util/file.hpp"

namespace stormo::testing {
namespace {

namespace fs = std::filesystem;

constexpr size_t kB = 16;     // block positions: one page
constexpr size_t kChunk = 4;  // the prompt's steps: they end on every block boundary

class TempDir {
public:
    TempDir() {
        path_ = fs::temp_directory_path() / ("stormo-prompt-cache-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
        fs::create_directories(path_);
    }
    ~TempDir() { fs::remove_all(path_); }
    std::string path() const { return path_.string(); }

private:
    static inline int counter_ = 0;
    fs::path path_;
};

// The block files under a cache directory.
std::vector<fs::path> block_files(const std::string& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".block") out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

// `n` tokens from the model's token source, repeated.
std::vector<int32_t> prompt_of(const std::string& model, size_t n, size_t shift = 0) {
    const std::vector<int32_t> source = token_source_of(model);
    std::vector<int32_t> out;
    for (size_t i = 0; i < n; ++i) out.push_back(source[(i + shift) % source.size()]);
    return out;
}

class PromptCacheTest : public ::testing::Test {
protected:
    void open_engine(const std::string& model) {
        STORMO_OPEN_FIXTURE_OR_SKIP(engine_, model_dir_of(model));
        auto id = engine_identity(*engine_);
        ASSERT_TRUE(id.has_value()) << id.error().message;
        identity_ = *id;
    }
    std::unique_ptr<Session> blank(size_t capacity, size_t max_block = kChunk, size_t rewind_slack = 0) {
        return std::make_unique<Session>(engine_->model(), capacity, max_block, rewind_slack);
    }
    std::unique_ptr<PromptCache> open_cache(uint64_t memory_bytes = 0, uint64_t size_bytes = uint64_t{1} << 30,
                                            const std::string& dir = {}, EngineIdentity identity = {}) {
        PromptCacheSettings s;
        s.dir = dir.empty() ? dir_.path() : dir;
        s.size_bytes = size_bytes;
        s.memory_bytes = memory_bytes;
        s.block_positions = kB;
        auto cache = PromptCache::open(s, identity.model.empty() ? identity_ : identity, blank(1)->layout());
        EXPECT_TRUE(cache.has_value()) << cache.error().message;
        return cache ? std::move(*cache) : nullptr;
    }
    // Computes `tokens` into `session` from its position in steps of kChunk, capturing after each.
    void compute_capturing(Session& session, std::span<const int32_t> tokens, PromptCache& cache, const std::string& partition = "") {
        for (size_t at = 0; at < tokens.size();) {
            // Steps end on multiples of kChunk, as the scheduler's end on block boundaries.
            const size_t n = std::min(kChunk - session.position() % kChunk, tokens.size() - at);
            const size_t since = session.position();
            all_logits(engine_->pipeline(), session, tokens.subspan(at, n));
            at += n;
            auto captured = cache.capture(session, since, partition, {});
            EXPECT_TRUE(captured.has_value()) << captured.error().message;
        }
    }
    // Restores `prompt`'s longest cached prefix into `session` (holding `held` of it already) and
    // checks that the rest of the prompt then gives the logits of an uninterrupted session.
    size_t restore_and_check(PromptCache& cache, Session& session, std::span<const int32_t> prompt, size_t held,
                             const std::vector<float>& expected, const std::string& what, const std::string& partition = "") {
        auto hit = cache.restore(session, prompt, prompt.size() - 1, held, partition);
        EXPECT_TRUE(hit.has_value()) << hit.error().message;
        if (!hit) return 0;
        const size_t from = hit->positions > 0 ? hit->positions : held;
        EXPECT_EQ(session.position(), from) << what;
        if (session.position() != from) return 0;
        const size_t vocab = engine_->model().vocab_size();
        const std::vector<float> rest = all_logits(engine_->pipeline(), session, prompt.subspan(from));
        EXPECT_TRUE(same_bits(rest, std::vector<float>(expected.begin() + static_cast<ptrdiff_t>(from * vocab), expected.end())))
            << what << ": continued from " << from;
        return hit->positions;
    }
    std::vector<float> uninterrupted(std::span<const int32_t> prompt) {
        auto whole = blank(prompt.size(), kChunk);
        return all_logits(engine_->pipeline(), *whole, prompt);
    }

    std::unique_ptr<Engine> engine_;
    EngineIdentity identity_;
    TempDir dir_;
};

class PromptCacheModels : public PromptCacheTest, public ::testing::WithParamInterface<std::string> {
protected:
    void SetUp() override { open_engine(GetParam()); }
};

TEST_P(PromptCacheModels, ARestoredPrefixContinuesWithTheBitsOfOneSessionThatNeverStopped) {
    const std::vector<int32_t> prompt = prompt_of(GetParam(), 3 * kB + 5);
    const size_t n = prompt.size();
    const std::vector<float> expected = uninterrupted(prompt);
    {
        auto cache = open_cache(uint64_t{1} << 30);
        auto first = blank(n);
        compute_capturing(*first, prompt, *cache);
        EXPECT_EQ(cache->stats().blocks_written, 3u);
        EXPECT_EQ(cache->stats().disk_blocks, 3u);
        EXPECT_EQ(block_files(dir_.path()).size(), 3u);
        // From memory (every block was kept there as it was written).
        auto fresh = blank(n);
        EXPECT_EQ(restore_and_check(*cache, *fresh, prompt, 0, expected, "from memory"), 3 * kB);
        EXPECT_EQ(cache->stats().memory_hits, 3u);
        EXPECT_EQ(cache->stats().disk_hits, 0u);
        EXPECT_EQ(cache->stats().positions_restored, 3 * kB);
    }
    // A restart: the same directory, a new cache with no memory tier: from the disk.
    auto cache = open_cache(0);
    EXPECT_EQ(cache->stats().disk_blocks, 3u);
    auto fresh = blank(n);
    EXPECT_EQ(restore_and_check(*cache, *fresh, prompt, 0, expected, "from the disk after a restart"), 3 * kB);
    EXPECT_EQ(cache->stats().disk_hits, 3u);
    // Rings of another size (another block, another rewind slack).
    for (const size_t max_block : {size_t{1}, size_t{64}}) {
        auto other = blank(n, max_block, 7);
        EXPECT_EQ(restore_and_check(*cache, *other, prompt, 0, expected, "into rings for blocks of " + std::to_string(max_block)),
                  3 * kB);
    }
    // A session holding part of the prompt already takes the blocks past it.
    auto partial = blank(n);
    all_logits(engine_->pipeline(), *partial, std::span<const int32_t>(prompt).first(kB + 3));
    EXPECT_EQ(restore_and_check(*cache, *partial, prompt, kB + 3, expected, "past a held prefix"), 3 * kB);
    // A session holding another prompt that shares a start with this one (a slot's last
    // conversation): the blocks replace what it held past the shared start.
    for (const size_t shared : {size_t{5}, size_t{kB + 7}}) {
        std::vector<int32_t> other(prompt.begin(), prompt.begin() + static_cast<ptrdiff_t>(shared));
        for (int32_t t : prompt_of(GetParam(), 3 * kB, 7)) other.push_back(t);
        auto slot = blank(n + 3 * kB, kChunk, 5);
        all_logits(engine_->pipeline(), *slot, other);
        const size_t held = reusable_prefix(slot->tokens(), prompt);
        EXPECT_GE(held, shared);
        EXPECT_EQ(restore_and_check(*cache, *slot, prompt, held, expected, "over another prompt sharing " + std::to_string(held)),
                  3 * kB);
    }
    // A session that already holds more than the cache has is left alone.
    auto ahead = blank(n);
    all_logits(engine_->pipeline(), *ahead, std::span<const int32_t>(prompt).first(3 * kB + 2));
    auto none = cache->restore(*ahead, prompt, n - 1, 3 * kB + 2, "");
    ASSERT_TRUE(none.has_value());
    EXPECT_EQ(none->positions, 0u);
    EXPECT_EQ(ahead->position(), 3 * kB + 2);
}

// A session that ran ahead with other tokens and rewound (its rings hold rows past its position)
// captures blocks that restore exactly.
TEST_P(PromptCacheModels, BlocksCapturedAfterARewindRestoreExactly) {
    const std::vector<int32_t> prompt = prompt_of(GetParam(), 3 * kB + 5);
    const std::vector<int32_t> other = prompt_of(GetParam(), 3 * kB, 5);
    const size_t n = prompt.size();
    const std::vector<float> expected = uninterrupted(prompt);
    for (const size_t slack : {size_t{0}, size_t{24}}) {
        TempDir dir;
        auto cache_here = open_cache(0, uint64_t{1} << 30, dir.path());
        auto s = blank(n, kChunk, slack);
        all_logits(engine_->pipeline(), *s, std::span<const int32_t>(prompt).first(30));
        all_logits(engine_->pipeline(), *s, std::span<const int32_t>(other).first(14));
        s->rewind(30);
        compute_capturing(*s, std::span<const int32_t>(prompt).subspan(30), *cache_here);
        EXPECT_EQ(cache_here->stats().blocks_written, 2u) << "slack " << slack;  // the blocks ending at 32 and 48
        auto fresh = blank(n);
        // Block 1 (ending at 16) was never captured: nothing to restore.
        EXPECT_EQ(restore_and_check(*cache_here, *fresh, prompt, 0, expected, "a chain without its first block"), 0u);
        auto held = blank(n);
        all_logits(engine_->pipeline(), *held, std::span<const int32_t>(prompt).first(20));
        EXPECT_EQ(restore_and_check(*cache_here, *held, prompt, 20, expected, "after a rewind, slack " + std::to_string(slack)),
                  3 * kB);
    }
}

// The server's steps run prompt chunks as long as the step allows, across block boundaries: one
// capture after a chunk that completed three blocks stores all three, and they restore exactly.
TEST_P(PromptCacheModels, OneChunkSpanningSeveralBlocksStoresEachOfThem) {
    const std::vector<int32_t> prompt = prompt_of(GetParam(), 3 * kB + 5);
    const size_t n = prompt.size();
    const std::vector<float> expected = uninterrupted(prompt);
    {
        auto cache = open_cache(0);
        auto first = blank(n, 64);
        all_logits(engine_->pipeline(), *first, prompt);
        auto captured = cache->capture(*first, 0, "", {});
        ASSERT_TRUE(captured.has_value()) << captured.error().message;
        EXPECT_EQ(cache->stats().blocks_written, 3u);
        // Captured again, nothing new: each block is stored once.
        ASSERT_TRUE(cache->capture(*first, 0, "", {}).has_value());
        EXPECT_EQ(cache->stats().blocks_written, 3u);
    }
    auto cache = open_cache(0);
    auto fresh = blank(n);
    EXPECT_EQ(restore_and_check(*cache, *fresh, prompt, 0, expected, "blocks captured from one chunk"), 3 * kB);
}

INSTANTIATE_TEST_SUITE_P(Models, PromptCacheModels, ::testing::ValuesIn(fixture_and_demo_names()),
                         [](const auto& param_info) { return test_name_of(param_info.param); });

class PromptCacheGuards : public PromptCacheTest {
protected:
    void SetUp() override {
        open_engine("gpt_oss");
        if (!engine_) return;
        prompt_ = prompt_of("gpt_oss", 2 * kB + 3);
        expected_ = uninterrupted(prompt_);
    }
    // Captures the prompt's two blocks into `cache`.
    void fill(PromptCache& cache, const std::string& partition = "") {
        auto s = blank(prompt_.size());
        compute_capturing(*s, prompt_, cache, partition);
    }
    std::vector<int32_t> prompt_;
    std::vector<float> expected_;
};

TEST_F(PromptCacheGuards, ACorruptedOrTruncatedBlockIsDroppedCountedAndMissed) {
    for (const bool truncate : {false, true}) {
        TempDir dir;
        {
            auto cache = open_cache(0, uint64_t{1} << 30, dir.path());
            fill(*cache);
        }
        const std::vector<fs::path> files = block_files(dir.path());
        ASSERT_EQ(files.size(), 2u);
        // Which file is the second block: the one whose restore fails below.
        for (const fs::path& victim : files) {
            auto bytes = read_file(victim.string());
            ASSERT_TRUE(bytes.has_value());
            std::string changed = *bytes;
            if (truncate) changed.resize(changed.size() * 2 / 3);
            else changed[changed.size() / 2] = static_cast<char>(changed[changed.size() / 2] ^ 0x01);
            const std::string saved = *bytes;
            ASSERT_TRUE(write_file(victim.string(), changed).has_value());
            auto cache = open_cache(0, uint64_t{1} << 30, dir.path());
            auto fresh = blank(prompt_.size());
            const size_t restored = restore_and_check(*cache, *fresh, prompt_, 0, expected_, truncate ? "truncated" : "corrupted");
            EXPECT_EQ(cache->stats().blocks_dropped, 1u);
            EXPECT_FALSE(fs::exists(victim));
            EXPECT_NE(cache->last_drop_reason().find(victim.stem().string()), std::string::npos) << cache->last_drop_reason();
            EXPECT_NE(cache->last_drop_reason().find(truncate ? "truncated" : "corrupted"), std::string::npos) << cache->last_drop_reason();
            EXPECT_LT(restored, 2 * kB);  // the block dropped (and what follows it) is a miss
            EXPECT_EQ(cache->stats().disk_blocks, 1u);
            ASSERT_TRUE(write_file(victim.string(), saved).has_value());
        }
    }
}

TEST_F(PromptCacheGuards, BlocksOfAnotherEngineOrLayoutAreNeverRestored) {
    {
        auto cache = open_cache(0);
        fill(*cache);
    }
    // Another engine (the same files, another identity): its keys differ, nothing is found.
    EngineIdentity other = identity_;
    other.kernels += " (another road)";
    {
        PromptCacheSettings s;
        s.dir = dir_.path();
        s.size_bytes = uint64_t{1} << 30;
        s.block_positions = kB;
        for (const auto& [id, layout] : {std::pair{other, blank(1)->layout()}, std::pair{identity_, blank(1)->layout() + "; layer 99: state of 1 floats"}}) {
            auto cache = PromptCache::open(s, id, layout);
            ASSERT_TRUE(cache.has_value());
            auto fresh = blank(prompt_.size());
            auto hit = (*cache)->restore(*fresh, prompt_, prompt_.size() - 1, 0, "");
            ASSERT_TRUE(hit.has_value());
            EXPECT_EQ(hit->positions, 0u);
            EXPECT_EQ(fresh->position(), 0u);
        }
    }
    // A block of this engine under the name another engine's block would have: refused at its check.
    TempDir other_dir;
    {
        auto cache = open_cache(0, uint64_t{1} << 30, other_dir.path(), other);
        fill(*cache);
    }
    const auto mine = block_files(dir_.path()), theirs = block_files(other_dir.path());
    ASSERT_EQ(theirs.size(), 2u);
    ASSERT_EQ(mine.size(), 2u);
    for (size_t i = 0; i < 2; ++i) fs::copy_file(mine[i], theirs[i], fs::copy_options::overwrite_existing);
    auto cache = open_cache(0, uint64_t{1} << 30, other_dir.path(), other);
    auto fresh = blank(prompt_.size());
    auto hit = cache->restore(*fresh, prompt_, prompt_.size() - 1, 0, "");
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->positions, 0u);
    EXPECT_GE(cache->stats().blocks_dropped, 1u);
    EXPECT_NE(cache->last_drop_reason().find("another"), std::string::npos) << cache->last_drop_reason();
}

TEST_F(PromptCacheGuards, PartitionsDoNotSeeEachOthersBlocks) {
    auto cache = open_cache(uint64_t{1} << 30);
    const std::string a = cache_partition("key-a"), b = cache_partition("key-b");
    EXPECT_NE(a, b);
    EXPECT_EQ(a.size(), 32u);
    EXPECT_EQ(a.find("key-a"), std::string::npos);
    EXPECT_EQ(cache_partition(""), "");
    fill(*cache, a);
    auto fresh = blank(prompt_.size());
    EXPECT_EQ(restore_and_check(*cache, *fresh, prompt_, 0, expected_, "another partition", b), 0u);
    EXPECT_EQ(restore_and_check(*cache, *blank(prompt_.size()), prompt_, 0, expected_, "no partition", ""), 0u);
    EXPECT_EQ(restore_and_check(*cache, *blank(prompt_.size()), prompt_, 0, expected_, "the same partition", a), 2 * kB);
}

TEST_F(PromptCacheGuards, TheSizeCapEvictsTheLeastRecentlyUsedAcrossARestart) {
    // Three one-block prompts; a cap of two blocks.
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = 0; i < 3; ++i) prompts.push_back(prompt_of("gpt_oss", kB + 2, 3 * i + 1));
    auto capture = [&](PromptCache& cache, const std::vector<int32_t>& p) {
        auto s = blank(p.size());
        compute_capturing(*s, std::span<const int32_t>(p).first(kB), cache);
    };
    auto hits = [&](PromptCache& cache, const std::vector<int32_t>& p) {
        auto s = blank(p.size());
        auto hit = cache.restore(*s, p, p.size() - 1, 0, "");
        EXPECT_TRUE(hit.has_value());
        return hit && hit->positions == kB;
    };
    uint64_t block_bytes = 0;
    {
        auto cache = open_cache(0);
        capture(*cache, prompts[0]);
        block_bytes = cache->stats().disk_bytes;
        ASSERT_GT(block_bytes, 0u);
    }
    fs::remove_all(dir_.path());
    {
        auto cache = open_cache(0, 2 * block_bytes + block_bytes / 2);
        capture(*cache, prompts[0]);
        capture(*cache, prompts[1]);
        EXPECT_TRUE(hits(*cache, prompts[0]));  // prompt 0 is now the most recently used
        EXPECT_EQ(cache->stats().blocks_evicted, 0u);
    }
    auto cache = open_cache(0, 2 * block_bytes + block_bytes / 2);
    EXPECT_EQ(cache->stats().disk_blocks, 2u);
    capture(*cache, prompts[2]);
    EXPECT_EQ(cache->stats().blocks_evicted, 1u);
    EXPECT_LE(cache->stats().disk_bytes, 2 * block_bytes + block_bytes / 2);
    EXPECT_EQ(block_files(dir_.path()).size(), 2u);
    EXPECT_TRUE(hits(*cache, prompts[0]));
    EXPECT_FALSE(hits(*cache, prompts[1]));
    EXPECT_TRUE(hits(*cache, prompts[2]));
    // Shrinking the cap at a restart evicts down to it at once.
    auto small = open_cache(0, block_bytes);
    EXPECT_EQ(small->stats().disk_blocks, 1u);
    EXPECT_TRUE(hits(*small, prompts[2]));
}

TEST_F(PromptCacheGuards, TheMemoryTierKeepsTheMostRecentlyUsedWithinItsCap) {
    auto probe = open_cache(0);
    fill(*probe);
    const uint64_t block_bytes = probe->stats().disk_bytes / 2;
    fs::remove_all(dir_.path());
    auto cache = open_cache(block_bytes + block_bytes / 2);
    fill(*cache);
    EXPECT_LE(cache->stats().memory_bytes, block_bytes + block_bytes / 2);
    EXPECT_GT(cache->stats().memory_bytes, 0u);
    auto fresh = blank(prompt_.size());
    EXPECT_EQ(restore_and_check(*cache, *fresh, prompt_, 0, expected_, "one block in memory"), 2 * kB);
    EXPECT_EQ(cache->stats().memory_hits, 1u);  // the last block written
    EXPECT_EQ(cache->stats().disk_hits, 1u);
}

// The experts stored with a block come back with the hit that ends on it.
TEST_F(PromptCacheGuards, TheExpertsOfTheLastBlockComeBackWithTheHit) {
    auto cache = open_cache(0);
    auto s = blank(prompt_.size());
    const std::vector<std::vector<int32_t>> first = {{}, {1, 5, 7}}, second = {{0, 2}, {3}, {}};
    for (size_t at = 0; at < 2 * kB; at += kChunk) {
        all_logits(engine_->pipeline(), *s, std::span<const int32_t>(prompt_).subspan(at, kChunk));
        ASSERT_TRUE(cache->capture(*s, at, "", s->position() == kB ? first : second).has_value());
    }
    auto fresh = blank(prompt_.size());
    auto hit = cache->restore(*fresh, prompt_, prompt_.size() - 1, 0, "");
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->positions, 2 * kB);
    EXPECT_EQ(hit->experts, second);
    auto shorter = blank(prompt_.size());
    hit = cache->restore(*shorter, std::span<const int32_t>(prompt_).first(kB + 1), kB, 0, "");
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->positions, kB);
    EXPECT_EQ(hit->experts, first);
}

TEST_F(PromptCacheGuards, TemporaryFilesACrashLeftAreRemovedAtOpen) {
    fill(*open_cache(0));
    const fs::path sub = block_files(dir_.path()).front().parent_path();
    const fs::path stray = sub / ".0123.block.stormo-tmp-99-0";
    const fs::path top = fs::path(dir_.path()) / ".x.stormo-tmp-1-2";
    ASSERT_TRUE(write_file(stray.string(), "half a block").has_value());
    ASSERT_TRUE(write_file(top.string(), "half").has_value());
    auto cache = open_cache(0);
    EXPECT_FALSE(fs::exists(stray));
    EXPECT_FALSE(fs::exists(top));
    EXPECT_EQ(cache->stats().disk_blocks, 2u);
}

TEST_F(PromptCacheGuards, AWriteThatFailsIsCountedAndChangesNothingElse) {
    auto cache = open_cache(0);
    // A file where every block's subdirectory would go.
    for (int i = 0; i < 256; ++i) {
        char name[3];
        std::snprintf(name, sizeof name, "%02x", i);
        ASSERT_TRUE(write_file(dir_.path() + "/" + name, "").has_value());
    }
    auto s = blank(prompt_.size());
    size_t errors = 0;
    for (size_t at = 0; at < prompt_.size(); at += kChunk) {
        all_logits(engine_->pipeline(), *s, std::span<const int32_t>(prompt_).subspan(at, std::min(kChunk, prompt_.size() - at)));
        errors += cache->capture(*s, at, "", {}).has_value() ? 0 : 1;
    }
    EXPECT_EQ(errors, 2u);
    EXPECT_EQ(cache->stats().write_errors, 2u);
    EXPECT_EQ(cache->stats().blocks_written, 0u);
    EXPECT_EQ(cache->stats().disk_blocks, 0u);
    EXPECT_FALSE(cache->last_write_error().empty());
    // The session that captured went on unharmed: its last logits are the uninterrupted run's.
    const size_t vocab = engine_->model().vocab_size();
    s->rewind(prompt_.size() - 1);
    auto again = all_logits(engine_->pipeline(), *s, std::span<const int32_t>(prompt_).last(1));
    EXPECT_TRUE(same_bits(again, std::vector<float>(expected_.end() - static_cast<ptrdiff_t>(vocab), expected_.end())));
    auto fresh = blank(prompt_.size());
    EXPECT_EQ(restore_and_check(*cache, *fresh, prompt_, 0, expected_, "nothing written"), 0u);
}

// A file that cannot grow (a full disk's effect, here by the process's file size limit): the
// write fails, is counted, and leaves neither a block nor its temporary file.
TEST_F(PromptCacheGuards, AWriteCutShortLeavesNoFile) {
    auto cache = open_cache(0);
    auto s = blank(prompt_.size());
    all_logits(engine_->pipeline(), *s, std::span<const int32_t>(prompt_).first(kB));
    struct rlimit before {};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead
    struct rlimit small = before;
    small.rlim_cur = 4096;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    auto captured = cache->capture(*s, 0, "", {});
    ::setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, old_handler);
    ASSERT_FALSE(captured.has_value());
    EXPECT_EQ(cache->stats().write_errors, 1u);
    EXPECT_EQ(cache->stats().disk_blocks, 0u);
    size_t files = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path())) files += e.is_regular_file() ? 1 : 0;
    EXPECT_EQ(files, 0u);
    // With room again, the same block is written.
    ASSERT_TRUE(cache->capture(*s, 0, "", {}).has_value());
    EXPECT_EQ(cache->stats().disk_blocks, 1u);
}

}  // namespace
}  // namespace stormo::testing
