// `stormo convert` (tools/convert.hpp, docs/convert.md): every model the engine reads, converted,
// gives the logits bits of its source, resident and streaming, and reads each expert in one read;
// the conversion streams through one chunk; a full disk or an interruption leaves nothing that
// loads; a damaged container is refused, and `inspect --check` names the tensor that differs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "checkpoint_rewrite.hpp"
#include "cli_runner.hpp"
#include "gguf_split_writer.hpp"
#include "model/container_source.hpp"
#include "oracle_support.hpp"
#include "store/expert_reads.hpp"
#include "tools/convert.hpp"

namespace stormo::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

Expected<ConvertResult> convert(const std::string& src, const std::string& out, uint64_t chunk_bytes = kConvertChunkBytes,
                                std::function<Expected<void>(const ConvertChunk&)> on_chunk = {}) {
    ConvertRequest request;
    request.setup.model_dir = src;
    request.out = out;
    request.chunk_bytes = chunk_bytes;
    request.on_chunk = std::move(on_chunk);
    return convert_model(request);
}

// Counts the store's reads.
class CountingBackend final : public ReadBackend {
public:
    CountingBackend(std::unique_ptr<ReadBackend> inner, std::shared_ptr<std::atomic<uint64_t>> reads)
        : inner_(std::move(inner)), reads_(std::move(reads)) {}
    Expected<size_t> read(const std::string& file, uint64_t offset, size_t size, void* dst) override {
        reads_->fetch_add(1);
        return inner_->read(file, offset, size, dst);
    }
    bool direct_io() const override { return inner_->direct_io(); }
    size_t alignment() const override { return inner_->alignment(); }

private:
    std::unique_ptr<ReadBackend> inner_;
    std::shared_ptr<std::atomic<uint64_t>> reads_;
};

struct LogitsRun {
    std::vector<float> logits;
    uint64_t reads = 0;
    uint64_t misses = 0;
};

// Every position's logits, with every expert resident or streaming through the fewest slots a
// token needs (so experts are read again and again), counting the store's reads.
LogitsRun logits_of(const std::string& dir, const std::vector<int32_t>& ids, bool streaming) {
    EngineOptions o;
    o.setup.model_dir = dir;
    o.threads = 2;
    auto reads = std::make_shared<std::atomic<uint64_t>>(0);
    o.wrap_read_backend = [reads](std::unique_ptr<ReadBackend> inner) -> std::unique_ptr<ReadBackend> {
        return std::make_unique<CountingBackend>(std::move(inner), reads);
    };
    if (streaming) {
        // The slot size, from an engine that streams with a budget just under every expert.
        EngineOptions probe = o;
        probe.expert_budget.kind = SizeSpec::Kind::all;
        auto resident = Engine::open(probe);
        EXPECT_TRUE(resident.has_value()) << resident.error().message;
        if (!resident) return {};
        const uint64_t top_k = static_cast<uint64_t>((*resident)->model().layer_plan(first_moe_layer((*resident)->model())).top_k);
        probe.expert_budget.kind = SizeSpec::Kind::bytes;
        probe.expert_budget.bytes = (*resident)->store().total_expert_bytes() - 1;
        resident->reset();
        auto sizing = Engine::open(probe);
        EXPECT_TRUE(sizing.has_value()) << sizing.error().message;
        if (!sizing) return {};
        o.expert_budget.kind = SizeSpec::Kind::bytes;
        o.expert_budget.bytes = (*sizing)->store().stats().slot_bytes * top_k;
    }
    auto engine = Engine::open(o);
    EXPECT_TRUE(engine.has_value()) << engine.error().message;
    if (!engine) return {};
    auto session = (*engine)->new_session(ids.size());
    EXPECT_TRUE(session.has_value());
    LogitsRun r;
    r.logits = all_logits((*engine)->pipeline(), **session, ids);
    r.reads = reads->load();
    r.misses = (*engine)->store().stats().misses;
    EXPECT_EQ((*engine)->store().streams(), streaming);
    return r;
}

// The models every family ships for tests: fixtures, demos, GGUF files in every type, the demo's
// GGUF, and (made in the test) a split GGUF, an FP8 checkpoint with a draft layer.
std::vector<std::string> models() {
    std::vector<std::string> names = fixture_and_demo_names();
    for (const auto& e : fs::directory_iterator(std::string(STORMO_TEST_DATA_DIR) + "/gguf"))
        if (e.path().extension() == ".gguf") names.push_back(e.path().filename().string());
    std::sort(names.begin() + static_cast<ptrdiff_t>(fixture_and_demo_names().size()), names.end());
    names.push_back("gpt-oss-demo-bf16.gguf (unpacked)");
    names.push_back("gpt-oss-demo split in two parts");
    names.push_back("deepseek_v3 FP8 with a draft layer");
    return names;
}

// Only the routed experts to FP8, with block scales: the parts a container keeps together.
bool routed_expert_matrix(const std::string& name) { return name.find(".mlp.experts.") != std::string::npos && name.ends_with(".weight"); }

// Writes the models made for the test into `dir`; the path to convert.
std::string source_path(const std::string& name, const test::TempDir& dir) {
    if (name == "gpt-oss-demo-bf16.gguf (unpacked)") return demo_gguf();
    if (name == "gpt-oss-demo split in two parts") return write_demo_split(dir).front();
    if (name == "deepseek_v3 FP8 with a draft layer") {
        const Fp8Copies copies = make_fp8_copies("deepseek_v3", routed_expert_matrix, 16, 24);
        std::map<std::string, StoredTensor> tensors = copies.fp8;
        // A multi-token-prediction layer (a copy of the last one) the engine does not load.
        for (const auto& [n, t] : copies.fp8)
            if (n.starts_with("model.layers.2.")) tensors["model.layers.3." + n.substr(15)] = t;
        std::string config = fixture_config_text("deepseek_v3");
        replace_once(config, "\"architectures\"",
                     "\"quantization_config\": {\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", \"quant_method\": \"fp8\", "
                     "\"weight_block_size\": [16, 24]},\n  \"num_nextn_predict_layers\": 1,\n  \"architectures\"");
        write_model(dir, config, tensors);
        return dir.path();
    }
    return model_dir_of(name);
}

std::vector<int32_t> ids_of(const std::string& name) {
    if (name.starts_with("gpt-oss-demo")) return token_source_of("gpt-oss-demo");
    if (name.starts_with("deepseek_v3 FP8")) return token_source_of("deepseek_v3");
    // A GGUF file made from no fixture of ours (deepseek_v3_tiny-q4_k_m.gguf).
    if (name.ends_with(".gguf") && !fs::exists(fixture_dir(name.substr(0, name.find('-'))))) return {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    return token_source_of(name);
}

class ConvertEveryModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvertEveryModel, TheContainerGivesTheSourcesLogitsBitsAndReadsEachExpertOnce) {
    test::TempDir made, out;
    const std::string src = source_path(GetParam(), made);
    if (auto probe = try_open_engine(src); !probe && probe.error().kind == ErrorKind::unsupported) GTEST_SKIP() << probe.error().message;
    const std::string dir = out.file("container");
    auto converted = convert(src, dir);
    ASSERT_TRUE(converted.has_value()) << converted.error().message;
    EXPECT_EQ(converted->container_reads_per_expert, 1u);
    EXPECT_GE(converted->source_reads_per_expert, 1u);
    ASSERT_TRUE(holds_container_manifest(dir));

    const std::vector<int32_t> ids = ids_of(GetParam());
    const LogitsRun source = logits_of(src, ids, false);
    const LogitsRun resident = logits_of(dir, ids, false);
    ASSERT_FALSE(source.logits.empty());
    EXPECT_TRUE(same_bits(resident.logits, source.logits)) << "resident";
    const LogitsRun streamed = logits_of(dir, ids, true);
    EXPECT_TRUE(same_bits(streamed.logits, source.logits)) << "streaming";
    // One read per expert read: a container's expert is one aligned range.
    ASSERT_GT(streamed.misses, 0u);
    EXPECT_EQ(streamed.reads, streamed.misses);
    // A container converts to the same container: the same tensors, bytes and hashes.
    auto again = convert(dir, out.file("again"));
    ASSERT_TRUE(again.has_value()) << again.error().message;
    const auto first = read_container_manifest(dir), second = read_container_manifest(out.file("again"));
    ASSERT_TRUE(first && second);
    ASSERT_EQ(first->tensors.size(), second->tensors.size());
    for (size_t i = 0; i < first->tensors.size(); ++i) {
        EXPECT_EQ(first->tensors[i].name, second->tensors[i].name);
        EXPECT_EQ(first->tensors[i].sha256, second->tensors[i].sha256) << first->tensors[i].name;
    }
}

INSTANTIATE_TEST_SUITE_P(Models, ConvertEveryModel, ::testing::ValuesIn(models()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return test_name_of(info.param); });

// The streaming store's read plan: parts closer than a page are one read, others stay apart, and
// every part's bytes land where the plan says.
TEST(ExpertReads, PartsTogetherAreOneReadAndPartsApartAreNot) {
    TensorInfo a{"a", DType::U8, {3, 1000}, "f", 8192, 3000};
    TensorInfo b{"b", DType::U8, {3, 500}, "f", 1 << 20, 1500};
    std::vector<ExpertPartLocation> apart{{&a, 1000, 1000}, {&b, 500, 500}};
    ExpertReadPlan plan = plan_expert_reads(apart, 4096);
    ASSERT_EQ(plan.reads.size(), 2u);
    EXPECT_EQ(plan.reads[0].file_begin, 8192u);
    EXPECT_EQ(plan.part_offsets[0], 1000u);
    EXPECT_EQ(plan.part_offsets[1], plan.reads[1].slot_offset + (uint64_t{1} << 20) + 500 - plan.reads[1].file_begin);
    // Declared in one order, laid out in the other, a page apart: one read.
    std::vector<ExpertPartLocation> together{{&a, 0, 1000, 3 * 4096}, {&b, 0, 500, 2 * 4096}};
    plan = plan_expert_reads(together, 4096);
    ASSERT_EQ(plan.reads.size(), 1u);
    EXPECT_EQ(plan.reads[0].file_begin, 2u * 4096);
    EXPECT_EQ(plan.reads[0].needed, 4096u + 1000);
    EXPECT_EQ(plan.part_offsets[0], 4096u);
    EXPECT_EQ(plan.part_offsets[1], 0u);
    EXPECT_EQ(plan.slot_bytes, 2u * 4096);
}

// The copy holds one chunk, never a tensor: with 4 KiB chunks, every tensor larger than that goes
// through in pieces, and the container is the same.
TEST(Convert, TheCopyHoldsOneChunkAtATime) {
    test::TempDir out;
    uint64_t chunks = 0, largest = 0;
    auto small = convert(demo_dir(), out.file("small"), 4096, [&](const ConvertChunk& c) -> Expected<void> {
        EXPECT_EQ(c.buffer_bytes, 4096u) << c.tensor;
        EXPECT_LE(c.bytes, 4096u) << c.tensor;
        largest = std::max(largest, c.bytes);
        ++chunks;
        return {};
    });
    ASSERT_TRUE(small.has_value()) << small.error().message;
    auto source = open_model_directory(demo_dir());
    ASSERT_TRUE(source.has_value());
    uint64_t biggest_tensor = 0;
    for (const TensorInfo& t : (*source)->tensors()) biggest_tensor = std::max(biggest_tensor, t.nbytes);
    EXPECT_GT(biggest_tensor, 16u * 4096) << "the demo should hold a tensor many chunks long";
    EXPECT_EQ(largest, 4096u);
    EXPECT_GT(chunks, (*source)->tensors().size());
    auto big = convert(demo_dir(), out.file("big"));
    ASSERT_TRUE(big.has_value());
    EXPECT_EQ(test::slurp(out.file("small") + "/weights.stormo"), test::slurp(out.file("big") + "/weights.stormo"));
}

// What a failed conversion leaves in the directory: nothing but what was there.
std::vector<std::string> listing(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// Stopped at a chosen chunk (as a kill or a failed write would stop it): no DIR, no temporary
// directory, and the error names the tensor.
TEST(Convert, AConversionStoppedMidwayLeavesNothing) {
    test::TempDir out;
    int n = 0;
    auto r = convert(demo_dir(), out.file("c"), 4096, [&](const ConvertChunk&) -> Expected<void> {
        if (++n == 40) return fail(ErrorKind::io, "stopped here");
        return {};
    });
    ASSERT_FALSE(r.has_value());
    EXPECT_THAT(r.error().message, HasSubstr("tensor \""));
    EXPECT_THAT(r.error().message, HasSubstr("stopped here"));
    EXPECT_TRUE(listing(out.path()).empty());
}

// A full disk (here the process's file size limit, which fails a write as a full disk does):
// the error names the data file, the tensor and the cause; nothing is left.
TEST(Convert, AFullDiskFailsNamingTheFileAndTheTensorAndLeavesNothing) {
    test::TempDir out;
    struct rlimit before {};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &before), 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = before;
    small.rlim_cur = 64 * 1024;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    auto r = convert(demo_dir(), out.file("c"));
    ::setrlimit(RLIMIT_FSIZE, &before);
    std::signal(SIGXFSZ, old_handler);
    ASSERT_FALSE(r.has_value());
    EXPECT_THAT(r.error().message, HasSubstr("weights.stormo"));
    EXPECT_THAT(r.error().message, HasSubstr("tensor \""));
    // Written past the page cache (the direct appender's words) or through it (AtomicFileWriter's).
    EXPECT_THAT(r.error().message, ::testing::AnyOf(HasSubstr("File too large"), HasSubstr("larger than this process may write")));
    EXPECT_TRUE(listing(out.path()).empty());
}

// What a killed conversion leaves (its temporary directory, holding data but no manifest) does
// not load, and the next conversion into the same DIR removes it.
TEST(Convert, AKilledConversionsDirectoryDoesNotLoadAndIsRemovedNextTime) {
    test::TempDir out;
    ASSERT_TRUE(convert(demo_dir(), out.file("whole")).has_value());
    // The dead process: a child that has exited and been waited for.
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ASSERT_GT(child, 0);
    ::waitpid(child, nullptr, 0);
    const std::string left = out.file(".c.stormo-convert-" + std::to_string(child));
    fs::copy(out.file("whole"), left);
    fs::remove(left + "/stormo-container.json");
    const test::CommandResult run = test::run_cli("run --model '" + left + "' -p 1+1=");
    EXPECT_NE(run.status, 0);
    EXPECT_THAT(run.err, HasSubstr("no model.safetensors"));
    ASSERT_TRUE(convert(demo_dir(), out.file("c")).has_value());
    EXPECT_FALSE(fs::exists(left));
}

class ConvertCli : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new test::TempDir;
        const test::CommandResult r = test::run_cli("convert --model " + demo_dir() + " --out " + dir_->file("demo"));
        ASSERT_EQ(r.status, 0) << r.err;
        summary_ = new std::string(r.err);
        const test::CommandResult g = test::run_cli("convert '" + demo_gguf() + "' --out " + dir_->file("gguf"));
        ASSERT_EQ(g.status, 0) << g.err;
    }
    static void TearDownTestSuite() {
        delete dir_;
        delete summary_;
    }
    static std::string container() { return dir_->file("demo"); }
    static std::string gguf_container() { return dir_->file("gguf"); }
    // A copy to damage.
    static std::string copy_of(const std::string& from, const test::TempDir& into) {
        const std::string to = into.file("copy");
        fs::copy(from, to);
        return to;
    }
    static test::TempDir* dir_;
    static std::string* summary_;
};
test::TempDir* ConvertCli::dir_ = nullptr;
std::string* ConvertCli::summary_ = nullptr;

TEST_F(ConvertCli, SaysWhatItWroteAndRefusesToOverwriteWithoutForce) {
    EXPECT_THAT(*summary_, HasSubstr("stormo: convert: wrote "));
    EXPECT_THAT(*summary_, HasSubstr("reads per expert 4 in the source, 1 in the container"));
    test::TempDir tmp;
    const std::string target = copy_of(container(), tmp);
    const test::CommandResult refused = test::run_cli("convert --model " + demo_dir() + " --out " + target);
    EXPECT_EQ(refused.status, 2);
    EXPECT_THAT(refused.err, HasSubstr("exists: pass --force to replace it"));
    const test::CommandResult forced = test::run_cli("convert --model " + demo_dir("qwen3-moe-demo") + " --out " + target + " --force");
    EXPECT_EQ(forced.status, 0) << forced.err;
    auto manifest = read_container_manifest(target);
    ASSERT_TRUE(manifest.has_value());
    EXPECT_EQ(manifest->family, "qwen3_moe");
    EXPECT_EQ(listing(tmp.path()), std::vector<std::string>{"copy"});
    const test::CommandResult self = test::run_cli("convert --model " + target + " --out " + target + " --force");
    EXPECT_EQ(self.status, 2);
    EXPECT_THAT(self.err, HasSubstr("is the source's own directory"));
}

// run, tokenize, chat-template: the same answers from the container as from its source, for a
// Hugging Face directory and for a GGUF file (whose tokenizer and template come from its metadata).
TEST_F(ConvertCli, RunTokenizeAndChatTemplateAnswerAsOnTheSource) {
    for (const auto& [src, conv] : {std::pair{demo_dir(), container()}, std::pair{demo_gguf(), gguf_container()}}) {
        SCOPED_TRACE(src);
        for (const std::string args : {std::string("run --model '%' --prompt '123+456='"),
                                       std::string("tokenize --tokenizer '%' --text 'hello 12+3'"),
                                       std::string("detokenize --tokenizer '%' --ids 1,2,3,40")}) {
            const auto with = [&](const std::string& path) {
                std::string line = args;
                line.replace(line.find('%'), 1, path);
                return test::run_cli(line);
            };
            const test::CommandResult a = with(src), b = with(conv);
            EXPECT_EQ(a.status, 0) << a.err;
            EXPECT_EQ(b.status, 0) << b.err;
            EXPECT_EQ(a.out, b.out) << args;
        }
    }
    test::TempDir tmp;
    test::write_bytes(tmp.file("m.json"), R"({"messages": [{"role": "user", "content": "2+2="}], "options": {"add_generation_prompt": true}})");
    const test::CommandResult a = test::run_cli("chat-template --tokenizer " + demo_dir() + " --messages " + tmp.file("m.json") + " --ids");
    const test::CommandResult b = test::run_cli("chat-template --tokenizer " + container() + " --messages " + tmp.file("m.json") + " --ids");
    EXPECT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
}

TEST_F(ConvertCli, InspectShowsReadsPerExpertAndCheckFindsAFlippedByteByTensor) {
    const test::CommandResult source = test::run_cli("inspect --model " + demo_dir());
    ASSERT_EQ(source.status, 0) << source.err;
    EXPECT_THAT(source.out, HasSubstr("reads per expert      4 (stormo convert lays each expert out as one)"));
    const test::CommandResult whole = test::run_cli("inspect --check --model " + container());
    ASSERT_EQ(whole.status, 0) << whole.err;
    EXPECT_THAT(whole.out, HasSubstr("reads per expert      1 (a stormo container"));
    EXPECT_THAT(whole.out, HasSubstr("against the manifest: every hash matches"));

    test::TempDir tmp;
    const std::string damaged = copy_of(container(), tmp);
    auto manifest = read_container_manifest(damaged);
    ASSERT_TRUE(manifest.has_value());
    const ContainerTensor& victim = manifest->tensors.back();
    {
        std::fstream f(damaged + "/weights.stormo", std::ios::in | std::ios::out | std::ios::binary);
        const auto at = static_cast<std::streamoff>(victim.pieces.front().offset + victim.pieces.front().nbytes / 2);
        f.seekg(at);
        const char byte = static_cast<char>(f.get() ^ 0x10);
        f.seekp(at);
        f.put(byte);
    }
    const test::CommandResult check = test::run_cli("inspect --check --model " + damaged);
    EXPECT_EQ(check.status, 1);
    EXPECT_THAT(check.err, HasSubstr("tensor \"" + victim.name + "\" does not match its sha256 in the manifest"));
    EXPECT_THAT(check.out, HasSubstr("1 differ"));
}

// A damaged container is refused, naming the file (and the tensor) at fault.
TEST_F(ConvertCli, ADamagedContainerIsRefusedNamingWhatIsWrong) {
    test::TempDir tmp;
    const std::string dir = copy_of(container(), tmp);
    const std::string data = dir + "/weights.stormo";
    const auto refused = [&](const std::string& expected) {
        const test::CommandResult r = test::run_cli("run --model " + dir + " -p 1+1=");
        EXPECT_EQ(r.status, 1) << r.out;
        EXPECT_THAT(r.err, HasSubstr(expected));
    };
    fs::resize_file(data, fs::file_size(data) - 5000);
    refused("weights.stormo: " + std::to_string(fs::file_size(data)) + " bytes, the manifest says");
    refused("truncated, tensor \"");
    fs::remove(data);
    refused("weights.stormo: the container's data file is missing");

    const std::string fresh = tmp.file("fresh");
    fs::copy(container(), fresh);
    std::string manifest = test::slurp(fresh + "/stormo-container.json");
    replace_once(manifest, "\"format_version\": 1", "\"format_version\": 2");
    test::write_bytes(fresh + "/stormo-container.json", manifest);
    const test::CommandResult future = test::run_cli("inspect --model " + fresh);
    EXPECT_EQ(future.status, 1);
    EXPECT_THAT(future.err, HasSubstr("stormo-container.json: format version 2 is not one this stormo reads (1)"));

    const std::string no_tokenizer = tmp.file("no_tokenizer");
    fs::copy(container(), no_tokenizer);
    fs::remove(no_tokenizer + "/tokenizer.json");
    const test::CommandResult missing = test::run_cli("run --model " + no_tokenizer + " -p 1+1=");
    EXPECT_EQ(missing.status, 1);
    EXPECT_THAT(missing.err, HasSubstr("tokenizer.json: not found (" + no_tokenizer + "/stormo-container.json lists it)"));
}

// A manifest whose fields lie about the data is refused when the container opens, naming the field.
TEST_F(ConvertCli, AManifestThatLiesIsRefusedNamingTheField) {
    const std::string path = container() + "/stormo-container.json";
    const std::string text = test::slurp(path);
    auto manifest = parse_container_manifest(text, path);
    ASSERT_TRUE(manifest.has_value()) << manifest.error().message;
    const ContainerTensor& first = manifest->tensors.front();
    const auto refused = [&](ContainerManifest m, const std::string& expected) {
        auto parsed = parse_container_manifest(encode_container_manifest(m), path);
        ASSERT_FALSE(parsed.has_value()) << expected;
        EXPECT_THAT(parsed.error().message, HasSubstr(expected));
    };
    ContainerManifest twice = *manifest;
    twice.tensors.push_back(first);
    refused(twice, "tensor \"" + first.name + "\" is listed twice");
    ContainerManifest unaligned = *manifest;
    unaligned.tensors.front().pieces.front().offset += 1;
    refused(unaligned, "(\"" + first.name + "\"): a piece at offset 1 is not aligned to 4096");
    ContainerManifest short_data = *manifest;
    short_data.data_bytes = 4096;
    refused(short_data, "runs past the data's 4096 bytes");
    ContainerManifest wrong_shape = *manifest;
    wrong_shape.tensors.front().shape.back() += 1;
    refused(wrong_shape, "do not hold a");
    // Pieces of two tensors on the same bytes ran the model on another tensor's bytes; only the
    // hashes of inspect --check noticed.
    ASSERT_GE(manifest->tensors.size(), 2u);
    ContainerManifest overlapping = *manifest;
    overlapping.tensors[1].pieces.front().offset = first.pieces.front().offset;
    refused(overlapping, "both hold bytes at offset " + std::to_string(first.pieces.front().offset) + " of the data");
    // The experts list: each expert once, its range exactly its pieces, every piece of the
    // routed experts in one.
    ASSERT_GE(manifest->experts.size(), 2u);
    ContainerManifest repeated = *manifest;
    repeated.experts.push_back(repeated.experts.front());
    refused(repeated, "(layer " + std::to_string(repeated.experts.front().layer) + ", expert " +
                          std::to_string(repeated.experts.front().expert) + ") is listed twice");
    ContainerManifest forgotten = *manifest;
    forgotten.experts.pop_back();
    refused(forgotten, "lies in no expert of the experts list");
    ContainerManifest grown = *manifest;  // one alignment more, in front of its first piece
    grown.experts.front().offset -= grown.alignment;
    grown.experts.front().nbytes += grown.alignment;
    refused(grown, "are not its pieces' range");
    ContainerManifest moved = *manifest;
    moved.experts[1].offset = moved.experts[0].offset;
    refused(moved, "overlaps");
}

}  // namespace
}  // namespace stormo::testing
