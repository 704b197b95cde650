// Session files: a session saved and loaded gives the next tokens the logits bits of a session
// that never stopped, for every fixture and demo (sliding-window rings that wrapped, GLM past
// index_topk, a session that rewound); and a file that does not belong here is refused, naming
// why: another model, config, engine or kernels road, another context layout, a context too
// small, a truncated or corrupted file, a file that is no session file.
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "oracle_support.hpp"
#include "runtime/engine_identity.hpp"
#include "runtime/session_bytes.hpp"
#include "runtime/session_file.hpp"
#include "store/read_ahead.hpp"
#include "util/content_hash.hpp"
#include "util/atomic_file.hpp"
#include "util/direct_appender.hpp"
#include "util/file.hpp"

namespace stormo::testing {
namespace {

constexpr size_t kBlock = 4;  // sessions of 4-position blocks: gpt_oss's 16-window rings wrap

class TempDir {
public:
    TempDir() {
        path_ = std::filesystem::temp_directory_path() /
                ("stormo-session-file-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() { std::filesystem::remove_all(path_); }
    std::string file(const std::string& name) const { return (path_ / name).string(); }
    size_t entries() const {
        return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(path_), std::filesystem::directory_iterator()));
    }

private:
    static inline int counter_ = 0;
    std::filesystem::path path_;
};

class SessionFile : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        STORMO_OPEN_FIXTURE_OR_SKIP(engine_, model_dir_of(GetParam()));
        tokens_ = token_source_of(GetParam());
        auto id = engine_identity(*engine_);
        ASSERT_TRUE(id.has_value()) << id.error().message;
        identity_ = *id;
    }
    std::unique_ptr<Session> blank(size_t capacity, size_t max_block = kBlock) {
        auto s = engine_->new_session(capacity, max_block);
        EXPECT_TRUE(s.has_value());
        return std::move(*s);
    }
    std::unique_ptr<Engine> engine_;
    std::vector<int32_t> tokens_;
    EngineIdentity identity_;
    TempDir dir_;
};

// Run N tokens, save, load into a new session, continue: the continuation's logits are the bits
// of one uninterrupted session's, at several cut points (before and after a ring wraps).
TEST_P(SessionFile, ALoadedSessionContinuesWithTheBitsOfOneThatNeverStopped) {
    const size_t n = tokens_.size();
    Pipeline& pipeline = engine_->pipeline();
    auto whole = blank(n);
    const std::vector<float> expected = all_logits(pipeline, *whole, tokens_);
    const size_t vocab = engine_->model().vocab_size();
    for (const size_t cut : {size_t{1}, n / 2, n - 1}) {
        auto first = blank(n);
        all_logits(pipeline, *first, std::span<const int32_t>(tokens_).first(cut));
        const std::string path = dir_.file("cut" + std::to_string(cut) + ".session");
        auto saved = save_session_file(path, *first, identity_, "{\"record\": 1}");
        ASSERT_TRUE(saved.has_value()) << saved.error().message;
        first.reset();
        auto loaded = load_session_file(path, identity_, blank(n));
        ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
        EXPECT_EQ(loaded->record, "{\"record\": 1}");
        EXPECT_EQ(loaded->stats.bytes, saved->bytes);
        ASSERT_EQ(loaded->session->position(), cut);
        EXPECT_TRUE(std::equal(tokens_.begin(), tokens_.begin() + static_cast<ptrdiff_t>(cut), loaded->session->tokens().begin()));
        const std::vector<float> rest = all_logits(pipeline, *loaded->session, std::span<const int32_t>(tokens_).subspan(cut));
        const std::vector<float> want(expected.begin() + static_cast<ptrdiff_t>(cut * vocab), expected.end());
        EXPECT_TRUE(same_bits(rest, want)) << "cut at " << cut;
        // Another file system (tmpfs: direct reads since Linux 6.6; before, the loader's road
        // through the page cache, taken wherever O_DIRECT is refused): the same bits.
        if (std::filesystem::is_directory("/dev/shm")) {
            const std::string shm = "/dev/shm/stormo-session-test-" + std::to_string(::getpid()) + ".session";
            std::filesystem::copy_file(path, shm, std::filesystem::copy_options::overwrite_existing);
            auto from_tmpfs = load_session_file(shm, identity_, blank(n));
            std::filesystem::remove(shm);
            ASSERT_TRUE(from_tmpfs.has_value()) << from_tmpfs.error().message;
            const std::vector<float> again = all_logits(pipeline, *from_tmpfs->session, std::span<const int32_t>(tokens_).subspan(cut));
            EXPECT_TRUE(same_bits(again, want)) << "cut at " << cut << ", loaded from tmpfs";
        }
    }
}

// The experts the last step's rows routed to travel with the session: each MoE layer's, sorted,
// within its range and at most Session::kRoutedRows rows' worth; none for a layer without experts.
TEST_P(SessionFile, TheExpertsTheLastStepRoutedToComeBackWithTheSession) {
    const size_t n = tokens_.size();
    auto s = blank(n);
    all_logits(engine_->pipeline(), *s, std::span<const int32_t>(tokens_).first(n - 1));
    const Model& model = engine_->model();
    const auto& routed = s->routed_experts();
    ASSERT_EQ(routed.size(), static_cast<size_t>(model.n_layers()));
    for (int l = 0; l < model.n_layers(); ++l) {
        const LayerPlan& plan = model.layer_plan(l);
        const auto& chosen = routed[static_cast<size_t>(l)];
        EXPECT_EQ(chosen.empty(), plan.ffn != FfnKind::moe) << "layer " << l;
        EXPECT_TRUE(std::is_sorted(chosen.begin(), chosen.end())) << "layer " << l;
        EXPECT_TRUE(std::adjacent_find(chosen.begin(), chosen.end()) == chosen.end()) << "layer " << l;
        for (int32_t e : chosen) EXPECT_TRUE(e >= 0 && e < plan.n_experts) << "layer " << l;
        EXPECT_LE(chosen.size(), Session::kRoutedRows * static_cast<size_t>(std::max(plan.top_k, 0))) << "layer " << l;
    }
    const std::string path = dir_.file("routed.session");
    ASSERT_TRUE(save_session_file(path, *s, identity_, "").has_value());
    auto loaded = load_session_file(path, identity_, blank(n));
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
    EXPECT_EQ(loaded->session->routed_experts(), routed);
    // One more token: its step's one row is the session's routing now.
    all_logits(engine_->pipeline(), *loaded->session, std::span<const int32_t>(tokens_).subspan(n - 1));
    for (int l = 0; l < model.n_layers(); ++l)
        EXPECT_LE(loaded->session->routed_experts()[static_cast<size_t>(l)].size(),
                  static_cast<size_t>(std::max(model.layer_plan(l).top_k, 0)));
}

// Rings of another size (a run with another --max-tokens, hence rewind slack, or block) take the
// rows they can hold; where those miss a window the session replays. Either way: the same bits.
TEST_P(SessionFile, ALoadIntoRingsOfAnotherSizeContinuesExactly) {
    const size_t n = tokens_.size();
    Pipeline& pipeline = engine_->pipeline();
    auto whole = blank(n);
    const std::vector<float> expected = all_logits(pipeline, *whole, tokens_);
    const size_t vocab = engine_->model().vocab_size();
    const size_t cut = n - 2;
    auto first = blank(n);
    all_logits(pipeline, *first, std::span<const int32_t>(tokens_).first(cut));
    const std::string path = dir_.file("rings.session");
    ASSERT_TRUE(save_session_file(path, *first, identity_, "").has_value());
    for (const size_t max_block : {size_t{1}, kBlock * 4}) {
        auto loaded = load_session_file(path, identity_, blank(n, max_block));
        ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
        const std::vector<float> rest = all_logits(pipeline, *loaded->session, std::span<const int32_t>(tokens_).subspan(cut));
        EXPECT_TRUE(same_bits(rest, std::vector<float>(expected.begin() + static_cast<ptrdiff_t>(cut * vocab), expected.end())))
            << "rings for blocks of " << max_block;
    }
}

// A session that rewound (a chat undoing its last answer) and was saved there continues exactly.
TEST_P(SessionFile, ASessionSavedAfterARewindContinuesExactly) {
    const size_t n = tokens_.size();
    Pipeline& pipeline = engine_->pipeline();
    auto whole = blank(n);
    const std::vector<float> expected = all_logits(pipeline, *whole, tokens_);
    auto s = blank(n);
    all_logits(pipeline, *s, tokens_);
    const size_t back = n / 3 + 1;
    s->rewind(back);
    const std::string path = dir_.file("rewound.session");
    ASSERT_TRUE(save_session_file(path, *s, identity_, "").has_value());
    auto loaded = load_session_file(path, identity_, blank(n));
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
    const std::vector<float> rest = all_logits(pipeline, *loaded->session, std::span<const int32_t>(tokens_).subspan(back));
    const size_t vocab = engine_->model().vocab_size();
    EXPECT_TRUE(same_bits(rest, std::vector<float>(expected.begin() + static_cast<ptrdiff_t>(back * vocab), expected.end())));
}

// Truncated anywhere, or one byte changed anywhere: refused, never loaded.
TEST_P(SessionFile, ATruncatedOrCorruptedFileIsRefused) {
    const size_t n = tokens_.size();
    auto s = blank(n);
    all_logits(engine_->pipeline(), *s, tokens_);
    const std::string path = dir_.file("whole.session");
    ASSERT_TRUE(save_session_file(path, *s, identity_, "{}").has_value());
    auto bytes = read_file(path);
    ASSERT_TRUE(bytes.has_value());
    const std::string good = *bytes;
    const std::string bad = dir_.file("bad.session");
    for (size_t k = 0; k < 16; ++k) {
        const size_t at = good.size() * k / 16;
        ASSERT_TRUE(write_file(bad, std::string_view(good).substr(0, at)).has_value());
        auto truncated = load_session_file(bad, identity_, blank(n));
        EXPECT_FALSE(truncated.has_value()) << "truncated at " << at << " of " << good.size();
        std::string flipped = good;
        const size_t flip = std::min(good.size() - 1, at + 17);
        flipped[flip] = static_cast<char>(flipped[flip] ^ 0x20);
        ASSERT_TRUE(write_file(bad, flipped).has_value());
        auto corrupted = load_session_file(bad, identity_, blank(n));
        EXPECT_FALSE(corrupted.has_value()) << "byte " << flip << " of " << good.size() << " changed";
        if (!corrupted) {
            EXPECT_NE(corrupted.error().message.find(bad), std::string::npos);
        }
    }
    ASSERT_TRUE(write_file(bad, good + "x").has_value());
    EXPECT_FALSE(load_session_file(bad, identity_, blank(n)).has_value());
}

INSTANTIATE_TEST_SUITE_P(Models, SessionFile, ::testing::ValuesIn(fixture_and_demo_names()),
                         [](const auto& param_info) { return test_name_of(param_info.param); });

class SessionFileRefusal : public ::testing::Test {
protected:
    void SetUp() override {
        STORMO_OPEN_FIXTURE_OR_SKIP(engine_, fixture_dir("gpt_oss"));
        auto id = engine_identity(*engine_);
        ASSERT_TRUE(id.has_value());
        identity_ = *id;
        session_ = std::move(*engine_->new_session(32, kBlock));
        ASSERT_TRUE(engine_->pipeline().forward(*session_, tokens_, {}).has_value());
        path_ = dir_.file("gpt_oss.session");
        ASSERT_TRUE(save_session_file(path_, *session_, identity_, "{}").has_value());
    }
    // The same fixture on one thread with a budget of a few slots: its experts stream.
    static Expected<std::unique_ptr<Engine>> open_streaming() {
        EngineOptions o;
        o.setup.model_dir = fixture_dir("gpt_oss");
        o.threads = 1;
        o.expert_budget.kind = SizeSpec::Kind::bytes;
        o.expert_budget.bytes = 256 << 10;
        return Engine::open(o);
    }
    std::string refusal(const EngineIdentity& id, std::unique_ptr<Session> blank) {
        auto loaded = load_session_file(path_, id, std::move(blank));
        EXPECT_FALSE(loaded.has_value());
        return loaded ? std::string() : loaded.error().message;
    }
    std::unique_ptr<Engine> engine_;
    EngineIdentity identity_;
    std::unique_ptr<Session> session_;
    std::vector<int32_t> tokens_ = {1, 5, 9, 2, 7, 3, 11, 4, 6, 8};
    TempDir dir_;
    std::string path_;
};

TEST_F(SessionFileRefusal, AnotherModelIsNamed) {
    std::unique_ptr<Engine> other;
    STORMO_OPEN_FIXTURE_OR_SKIP(other, fixture_dir("gpt_oss_long"));
    auto id = engine_identity(*other);
    ASSERT_TRUE(id.has_value());
    EXPECT_NE(id->model, identity_.model);
    EXPECT_NE(refusal(*id, std::move(*other->new_session(32, kBlock))).find("another model"), std::string::npos);
}

TEST_F(SessionFileRefusal, AnotherConfigEngineOrKernelsRoadIsNamed) {
    EngineIdentity config = identity_;
    config.config = "0123";
    EXPECT_NE(refusal(config, std::move(*engine_->new_session(32, kBlock))).find("another config.json"), std::string::npos);
    EngineIdentity engine = identity_;
    engine.engine += " (older)";
    EXPECT_NE(refusal(engine, std::move(*engine_->new_session(32, kBlock))).find("another engine"), std::string::npos);
    // The same model on the int8 road and on the reference kernels: other numerics, other bits.
    for (const auto& [kernels, road] : {std::pair{std::string("auto"), ActivationRoad::int8}, std::pair{std::string("reference"), ActivationRoad::f32}}) {
        auto other = try_open_engine(fixture_dir("gpt_oss"), kernels, 2, road);
        ASSERT_TRUE(other.has_value());
        auto id = engine_identity(**other);
        ASSERT_TRUE(id.has_value());
        if (id->kernels == identity_.kernels) continue;  // a CPU where auto picks the reference kernels
        EXPECT_EQ(id->model, identity_.model);
        EXPECT_NE(refusal(*id, std::move(*(*other)->new_session(32, kBlock))).find("other kernels"), std::string::npos);
    }
}

TEST_F(SessionFileRefusal, AnotherContextLayoutOrASmallerContextIsNamed) {
    // Sessions of another model's layout (the identity passed as this one's, to reach the check).
    std::unique_ptr<Engine> other;
    STORMO_OPEN_FIXTURE_OR_SKIP(other, fixture_dir("qwen3_moe"));
    const std::string layout = refusal(identity_, std::move(*other->new_session(32, kBlock)));
    EXPECT_NE(layout.find("another context layout (saved: "), std::string::npos) << layout;
    const std::string small = refusal(identity_, std::move(*engine_->new_session(tokens_.size() - 1, kBlock)));
    EXPECT_NE(small.find("--context"), std::string::npos) << small;
    // A larger context is fine: the file holds positions, not a capacity.
    EXPECT_TRUE(load_session_file(path_, identity_, std::move(*engine_->new_session(64, kBlock))).has_value());
}

TEST_F(SessionFileRefusal, AFileThatIsNoSessionFileIsNamed) {
    const std::string other = dir_.file("config.json");
    std::filesystem::copy_file(fixture_dir("gpt_oss") + "/config.json", other);
    auto loaded = load_session_file(other, identity_, std::move(*engine_->new_session(32, kBlock)));
    ASSERT_FALSE(loaded.has_value());
    EXPECT_NE(loaded.error().message.find("not a stormo session file"), std::string::npos) << loaded.error().message;
    auto missing = load_session_file(dir_.file("none.session"), identity_, std::move(*engine_->new_session(32, kBlock)));
    ASSERT_FALSE(missing.has_value());
    EXPECT_EQ(missing.error().kind, ErrorKind::missing);
}

// A save that cannot finish leaves what was there and no temporary file.
TEST_F(SessionFileRefusal, AFailedSaveLeavesThePreviousFileAndNoTemporaryFile) {
    auto before = read_file(path_);
    ASSERT_TRUE(before.has_value());
    const size_t entries = dir_.entries();
    auto nowhere = save_session_file(dir_.file("missing-dir/x.session"), *session_, identity_, "{}");
    ASSERT_FALSE(nowhere.has_value());
    EXPECT_NE(nowhere.error().message.find("missing-dir"), std::string::npos);
    EXPECT_EQ(dir_.entries(), entries);
    EXPECT_EQ(*read_file(path_), *before);
}

// What decides the bits is the identity; what does not (threads, the expert budget) is not part of it.
TEST_F(SessionFileRefusal, TheIdentityIgnoresThreadsAndBudget) {
    auto streaming = open_streaming();
    if (!streaming) GTEST_SKIP() << streaming.error().message;
    auto id = engine_identity(**streaming);
    ASSERT_TRUE(id.has_value());
    EXPECT_TRUE(identity_mismatch(*id, identity_).empty()) << identity_mismatch(*id, identity_);
}

// A format-1 file (before the experts were kept) still loads, with no experts to read ahead.
TEST_F(SessionFileRefusal, AFormatOneFileLoadsWithoutExperts) {
    session_->set_routed_experts({});
    ASSERT_TRUE(save_session_file(path_, *session_, identity_, "{}").has_value());
    auto bytes = read_file(path_);
    ASSERT_TRUE(bytes.has_value());
    // Format 2's header is format 1's and the expert lists (here one count of 0): cut them off,
    // set the format and the header's length, and checksum the shorter header.
    std::string file = *bytes;
    constexpr size_t kMagicBytes = 16, kPreamble = kMagicBytes + 4 + 4 + 8;
    ASSERT_EQ(get_u32(file.data() + kMagicBytes), 2u);
    const uint64_t header = get_u64(file.data() + kMagicBytes + 8);
    ASSERT_EQ(get_u64(file.data() + kPreamble + header - 8), 0u);
    std::string old = file.substr(0, kPreamble) + file.substr(kPreamble, header - 8);
    put_u32(old.data() + kMagicBytes, 1);
    put_u64(old.data() + kMagicBytes + 8, header - 8);
    char sum[8];
    put_u64(sum, checksum64(old.data() + kPreamble, header - 8));
    old.append(sum, sizeof sum);
    old += file.substr(kPreamble + header + 8);
    const std::string v1 = dir_.file("format1.session");
    std::ofstream(v1, std::ios::binary) << old;
    session_->set_routed_experts({{1}});
    auto loaded = load_session_file(v1, identity_, std::move(*engine_->new_session(32, kBlock)));
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
    EXPECT_EQ(loaded->session->position(), tokens_.size());
    EXPECT_TRUE(loaded->session->routed_experts().empty());
    // A format this stormo does not know is named.
    put_u32(old.data() + kMagicBytes, 3);
    std::ofstream(v1, std::ios::binary | std::ios::trunc) << old;
    auto newer = load_session_file(v1, identity_, std::move(*engine_->new_session(32, kBlock)));
    ASSERT_FALSE(newer.has_value());
    EXPECT_NE(newer.error().message.find("format 3, this stormo reads formats 1 to 2"), std::string::npos) << newer.error().message;
}

// A load into a streaming store reads ahead the experts the saved session's last step chose, up
// to the store's slots: the first step after it finds them there instead of missing.
TEST_F(SessionFileRefusal, AStreamingStoreReadsAheadTheSavedExperts) {
    auto streaming = open_streaming();
    if (!streaming) GTEST_SKIP() << streaming.error().message;
    Engine& engine = **streaming;
    ExpertStore& store = engine.store();
    ASSERT_TRUE(store.streams());
    auto loaded = load_session_file(path_, identity_, std::move(*engine.new_session(32, kBlock)));
    ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
    const auto& routed = loaded->session->routed_experts();
    size_t wanted = 0;
    for (const auto& layer : routed) wanted += layer.size();
    ASSERT_GT(wanted, 0u);
    const size_t slots = store.stats().slots;
    const size_t asked = read_ahead_experts(store, routed);
    EXPECT_EQ(asked, std::min(wanted, slots));
    EXPECT_EQ(store.stats().prefetch_issued, asked);
    // The first MoE layer's experts are asked for first: they are all in flight or in.
    const uint64_t misses = store.stats().misses;
    for (size_t l = 0; l < routed.size(); ++l) {
        if (routed[l].empty()) continue;
        auto batch = store.acquire(static_cast<int>(l), std::span<const int32_t>(routed[l]).first(std::min(routed[l].size(), asked)));
        ASSERT_TRUE(batch.has_value()) << batch.error().message;
        break;
    }
    EXPECT_EQ(store.stats().misses, misses);
    // A resident store has nothing to read ahead.
    EXPECT_EQ(read_ahead_experts(engine_->store(), routed), 0u);
}

}  // namespace
}  // namespace stormo::testing

namespace stormo {
namespace {

// A save killed mid-write leaves its temporary file; the next run on that file removes it, but
// never the file of a writer that still runs, nor another file's.
TEST(StaleTempFiles, OnlyThoseOfWritersThatNoLongerRunAreRemoved) {
    const auto dir = std::filesystem::temp_directory_path() / ("stormo-stale-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) ::_exit(0);
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // a pid that no longer runs
    const std::string path = (dir / "chat.session").string();
    const auto dead = dir / (".chat.session.stormo-tmp-" + std::to_string(child) + "-0");
    const auto live = dir / (".chat.session.stormo-tmp-" + std::to_string(::getpid()) + "-3");
    const auto other = dir / (".other.session.stormo-tmp-" + std::to_string(child) + "-0");
    for (const auto& f : {dead, live, other}) ASSERT_TRUE(write_file(f.string(), "part").has_value());
    auto removed = remove_stale_temp_files(path);
    ASSERT_TRUE(removed.has_value()) << removed.error().message;
    EXPECT_EQ(*removed, 1u);
    EXPECT_FALSE(std::filesystem::exists(dead));
    EXPECT_TRUE(std::filesystem::exists(live));
    EXPECT_TRUE(std::filesystem::exists(other));
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stormo

namespace stormo {
namespace {

// Direct writes go in whole aligned windows: a file of any length comes out byte for byte,
// appended in pieces of any size across the windows.
TEST(DirectAppenderFile, AnyLengthInAnyPiecesComesOutByteForByte) {
    const std::string path = (std::filesystem::temp_directory_path() / ("stormo-direct-" + std::to_string(::getpid()))).string();
    for (const size_t length : {size_t{1}, size_t{4096}, size_t{(size_t{8} << 20) * 2 + 12345}}) {
        ASSERT_TRUE(write_file(path, "").has_value());
        auto appender = DirectAppender::open(path);
        if (!appender) GTEST_SKIP() << "the file system of " << path << " refuses direct writes";
        std::string want(length, '\0');
        for (size_t i = 0; i < length; ++i) want[i] = static_cast<char>((i * 131 + i / 4099) & 0xff);
        for (size_t at = 0, piece = 1; at < length; at += piece, piece = piece * 7 % 1000003 + 1) {
            piece = std::min(piece, length - at);
            ASSERT_TRUE(appender->append(want.data() + at, piece).has_value());
        }
        auto done = appender->finish();
        ASSERT_TRUE(done.has_value()) << done.error().message;
        EXPECT_EQ(*done, length);
        appender.reset();
        auto got = read_file(path, length + 1);
        ASSERT_TRUE(got.has_value());
        EXPECT_TRUE(*got == want) << "length " << length;
    }
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace stormo
