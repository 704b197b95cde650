// The model reader against synthetic and deliberately broken safetensors directories: every
// failure is an error value naming the file (and tensor), never a crash.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "model/safetensors.hpp"
#include "safetensors_writer.hpp"
#include "model/model_source.hpp"

namespace stormo {
namespace {

using test::SyntheticTensor;
using test::TempDir;
using ::testing::HasSubstr;

std::string read_all(const ModelSource& source, const TensorInfo& t) {
    std::string bytes(t.nbytes, '\0');
    auto r = source.read(t, 0, t.nbytes, bytes.data());
    EXPECT_TRUE(r) << r.error().message;
    return bytes;
}

// Opens `dir` expecting failure; returns the message (empty, and a test failure, if it opened).
std::string open_error(const TempDir& dir) {
    auto source = open_model_directory(dir.path());
    EXPECT_FALSE(source) << "expected " << dir.path() << " to be refused";
    return source ? std::string() : source.error().message;
}

// A directory with config.json and a model.safetensors holding the given raw bytes.
void write_model(const TempDir& dir, std::string_view safetensors) {
    test::write_config(dir);
    test::write_bytes(dir.file("model.safetensors"), safetensors);
}

std::vector<SyntheticTensor> three_tensors() {
    return {
        {"model.norm.weight", "BF16", {4}, test::pattern_bytes(8, 1)},
        {"lm_head.weight", "F32", {3, 4}, test::pattern_bytes(48, 2)},
        {"model.embed_tokens.weight", "F16", {2, 2, 3}, test::pattern_bytes(24, 3)},
    };
}

TEST(SafetensorsModel, ReadsSingleFileWithSortedTensorsAndAbsoluteOffsets) {
    TempDir dir;
    test::write_config(dir);
    const auto tensors = three_tensors();
    const std::string header = test::header_for(tensors, R"({"format":"pt"})");
    test::write_bytes(dir.file("model.safetensors"), test::safetensors_bytes(header, test::data_for(tensors)));

    auto source = open_model_directory(dir.path() + "/");
    ASSERT_TRUE(source) << source.error().message;
    const ModelSource& s = **source;
    EXPECT_EQ(s.directory(), dir.path());
    EXPECT_EQ(*s.config().string("model_type"), "synthetic");
    EXPECT_FALSE(s.generation_config().has_value());
    ASSERT_EQ(s.tensors().size(), 3u);
    EXPECT_TRUE(std::is_sorted(s.tensors().begin(), s.tensors().end(),
                               [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; }));

    uint64_t begin = 0;
    for (const SyntheticTensor& t : tensors) {
        const TensorInfo* info = s.find(t.name);
        ASSERT_NE(info, nullptr) << t.name;
        EXPECT_EQ(dtype_name(info->dtype), t.dtype);
        EXPECT_EQ(info->shape, t.shape);
        EXPECT_EQ(info->nbytes, t.data.size());
        EXPECT_EQ(info->file, dir.file("model.safetensors"));
        EXPECT_EQ(info->offset, 8 + header.size() + begin);
        EXPECT_EQ(read_all(s, *info), t.data) << t.name;
        begin += t.data.size();
    }
    EXPECT_EQ(s.find("model.missing"), nullptr);
    EXPECT_EQ(s.find(""), nullptr);
}

TEST(SafetensorsModel, PartialReadsAndReadsPastTheTensor) {
    TempDir dir;
    test::write_config(dir);
    const auto tensors = three_tensors();
    test::write_safetensors(dir.file("model.safetensors"), tensors);
    auto source = open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;
    const TensorInfo* t = (*source)->find("lm_head.weight");
    ASSERT_NE(t, nullptr);

    std::string middle(20, '\0');
    ASSERT_TRUE((*source)->read(*t, 10, 20, middle.data()));
    EXPECT_EQ(middle, tensors[1].data.substr(10, 20));

    std::string sink(64, '\0');
    auto past = (*source)->read(*t, 40, 9, sink.data());
    ASSERT_FALSE(past);
    EXPECT_THAT(past.error().message, HasSubstr("lm_head.weight"));
    EXPECT_THAT(past.error().message, HasSubstr("model.safetensors"));
    EXPECT_THAT(past.error().message, HasSubstr("past the tensor"));
    EXPECT_FALSE((*source)->read(*t, 49, 0, sink.data()));
    EXPECT_TRUE((*source)->read(*t, 48, 0, sink.data()));

    TensorInfo foreign = *t;
    foreign.file = "/nonexistent/model.safetensors";
    auto other = (*source)->read(foreign, 0, 4, sink.data());
    ASSERT_FALSE(other);
    EXPECT_THAT(other.error().message, HasSubstr("not a shard"));
}

TEST(SafetensorsModel, ReadOfAFileThatShrankIsAnError) {
    TempDir dir;
    test::write_config(dir);
    test::write_safetensors(dir.file("model.safetensors"), three_tensors());
    auto source = open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;
    ASSERT_EQ(::truncate(dir.file("model.safetensors").c_str(), 40), 0);
    const TensorInfo* t = (*source)->find("model.norm.weight");
    ASSERT_NE(t, nullptr);
    std::string bytes(t->nbytes, '\0');
    auto r = (*source)->read(*t, 0, t->nbytes, bytes.data());
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("end of file"));
    EXPECT_THAT(r.error().message, HasSubstr("model.norm.weight"));
}

TEST(SafetensorsModel, ConcurrentReadsFromSeveralThreads) {
    TempDir dir;
    test::write_config(dir);
    std::vector<SyntheticTensor> tensors;
    for (unsigned i = 0; i < 16; ++i)
        tensors.push_back({std::string("t").append(std::to_string(i)), "U8", {4096}, test::pattern_bytes(4096, i)});
    test::write_safetensors(dir.file("model.safetensors"), tensors);
    auto source = open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;

    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (size_t w = 0; w < mismatches.size(); ++w)
        threads.emplace_back([&, w] {
            for (int round = 0; round < 50; ++round)
                for (const SyntheticTensor& t : tensors) {
                    std::string bytes(t.data.size(), '\0');
                    auto r = (*source)->read(*(*source)->find(t.name), 0, bytes.size(), bytes.data());
                    if (!r || bytes != t.data) ++mismatches[w];
                }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(SafetensorsModel, ReadsGenerationConfigWhenPresent) {
    TempDir dir;
    test::write_config(dir);
    test::write_safetensors(dir.file("model.safetensors"), three_tensors());
    test::write_bytes(dir.file("generation_config.json"), R"({"eos_token_id": [1, 2]})");
    auto source = open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;
    ASSERT_TRUE((*source)->generation_config().has_value());
    EXPECT_EQ(*(*source)->generation_config()->integers("eos_token_id"), (std::vector<int64_t>{1, 2}));
}

TEST(SafetensorsModel, AcceptsEverySupportedDtype) {
    TempDir dir;
    test::write_config(dir);
    const std::vector<std::string> names = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16",
                                            "I8",  "U8",  "BOOL", "F8_E4M3", "F8_E5M2"};
    std::vector<SyntheticTensor> tensors;
    for (size_t i = 0; i < names.size(); ++i) {
        const size_t size = dtype_size(*dtype_from_name(names[i]));
        tensors.push_back({"w." + names[i], names[i], {2, 3}, test::pattern_bytes(6 * size, static_cast<unsigned>(i))});
    }
    test::write_safetensors(dir.file("model.safetensors"), tensors);
    auto source = open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;
    ASSERT_EQ((*source)->tensors().size(), names.size());
    for (const SyntheticTensor& t : tensors) {
        const TensorInfo* info = (*source)->find(t.name);
        ASSERT_NE(info, nullptr) << t.name;
        EXPECT_EQ(dtype_name(info->dtype), t.dtype);
        EXPECT_EQ(read_all(**source, *info), t.data);
    }
}

TEST(SafetensorsModel, EmptyTensorsAndScalarsAreValid) {
    TempDir dir;
    test::write_config(dir);
    const std::vector<SyntheticTensor> tensors = {
        {"empty", "F32", {0, 5}, ""},
        {"scalar", "F32", {}, test::pattern_bytes(4, 9)},
        {"after", "U8", {3}, test::pattern_bytes(3, 8)},
    };
    test::write_safetensors(dir.file("model.safetensors"), tensors);
    auto source = open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;
    EXPECT_EQ((*source)->find("empty")->nbytes, 0u);
    EXPECT_EQ(read_all(**source, *(*source)->find("scalar")), tensors[1].data);
}

TEST(SafetensorsErrors, FileShorterThanTheLengthPrefix) {
    TempDir dir;
    write_model(dir, "\x05\x00\x00");
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("model.safetensors"));
    EXPECT_THAT(m, HasSubstr("too short"));
}

TEST(SafetensorsErrors, HeaderLengthPastTheEndOfTheFile) {
    TempDir dir;
    std::string bytes = test::safetensors_bytes("{}", "");
    bytes[0] = static_cast<char>(0xF0);  // claims a 240-byte header in a 10-byte file
    write_model(dir, bytes);
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("model.safetensors"));
    EXPECT_THAT(m, HasSubstr("header length 240 runs past the end of the file"));
}

TEST(SafetensorsErrors, AbsurdHeaderLength) {
    TempDir dir;
    test::write_config(dir);
    // A sparse 160 MB file whose prefix claims a 150 MB header: refused before reading it.
    const std::string path = dir.file("model.safetensors");
    std::string prefix = test::safetensors_bytes("", "");
    const uint64_t claimed = 150'000'000;
    for (size_t i = 0; i < 8; ++i) prefix[i] = static_cast<char>((claimed >> (8 * i)) & 0xFFu);
    test::write_bytes(path, prefix);
    ASSERT_EQ(::truncate(path.c_str(), 160'000'000), 0);
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("model.safetensors"));
    EXPECT_THAT(m, HasSubstr("exceeds the limit"));
}

TEST(SafetensorsErrors, HeaderIsNotValidJson) {
    TempDir dir;
    write_model(dir, test::safetensors_bytes(R"({"w": {"dtype": "F32",)", ""));
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("model.safetensors"));
    EXPECT_THAT(m, HasSubstr("invalid JSON"));
}

TEST(SafetensorsErrors, HeaderIsNotAnObject) {
    TempDir dir;
    write_model(dir, test::safetensors_bytes("[1, 2, 3]", ""));
    EXPECT_THAT(open_error(dir), HasSubstr("safetensors header must be a JSON object, found array"));
}

TEST(SafetensorsErrors, UnknownDtype) {
    TempDir dir;
    write_model(dir, test::safetensors_bytes("{" + test::header_entry("w", "F4", {2}, 0, 1) + "}", "x"));
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("model.safetensors"));
    EXPECT_THAT(m, HasSubstr("unknown dtype \"F4\" for tensor \"w\""));
}

TEST(SafetensorsErrors, MalformedEntries) {
    struct Case {
        std::string header;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {R"({"w": 5})", "tensor \"w\": header entry must be an object"},
        {R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", "tensor \"w\": \"dtype\" is missing"},
        {R"({"w": {"dtype": 7, "shape": [1], "data_offsets": [0, 4]}})", "\"dtype\" must be a string"},
        {R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", "\"shape\" is missing"},
        {R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "non-negative integers"},
        {R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", "non-negative integers"},
        {R"({"w": {"dtype": "F32", "shape": [1]}})", "\"data_offsets\" is missing"},
        {R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", "two non-negative integers"},
        {R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, -4]}})", "two non-negative integers"},
        {R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [4, 0]}})", "begin after they end"},
        {R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", "is too large"},
        {R"({"__metadata__": {"format": 1}})", "\"__metadata__\" value \"format\" must be a string"},
        {R"({"__metadata__": [1]})", "\"__metadata__\" must be an object of strings"},
        {R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
         "duplicate key \"w\""},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.header);
        TempDir dir;
        write_model(dir, test::safetensors_bytes(c.header, std::string(8, 'x')));
        const std::string m = open_error(dir);
        EXPECT_THAT(m, HasSubstr("model.safetensors"));
        EXPECT_THAT(m, HasSubstr(c.expected));
    }
}

TEST(SafetensorsErrors, ShapeAndByteCountMismatch) {
    TempDir dir;
    write_model(dir, test::safetensors_bytes("{" + test::header_entry("w", "F32", {2, 3}, 0, 20) + "}",
                                             std::string(20, 'x')));
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("model.safetensors"));
    EXPECT_THAT(m, HasSubstr("tensor \"w\""));
    EXPECT_THAT(m, HasSubstr("[2, 3]"));
    EXPECT_THAT(m, HasSubstr("F32"));
    EXPECT_THAT(m, HasSubstr("needs 24 bytes"));
    EXPECT_THAT(m, HasSubstr("span 20 bytes"));
}

TEST(SafetensorsErrors, OverlappingRangesNameBothTensors) {
    TempDir dir;
    const std::string header = "{" + test::header_entry("a", "U8", {8}, 0, 8) + "," +
                               test::header_entry("b", "U8", {4}, 6, 10) + "}";
    write_model(dir, test::safetensors_bytes(header, std::string(10, 'x')));
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("model.safetensors"));
    EXPECT_THAT(m, HasSubstr("\"a\""));
    EXPECT_THAT(m, HasSubstr("\"b\""));
    EXPECT_THAT(m, HasSubstr("overlap"));
}

TEST(SafetensorsErrors, RangeNestedInsideAnotherOverlaps) {
    TempDir dir;
    const std::string header = "{" + test::header_entry("big", "U8", {10}, 0, 10) + "," +
                               test::header_entry("mid", "U8", {2}, 4, 6) + "," +
                               test::header_entry("small", "U8", {1}, 7, 8) + "}";
    write_model(dir, test::safetensors_bytes(header, std::string(10, 'x')));
    EXPECT_THAT(open_error(dir), HasSubstr("overlap"));
}

TEST(SafetensorsErrors, RangePastTheEndOfTheFile) {
    TempDir dir;
    write_model(dir, test::safetensors_bytes("{" + test::header_entry("w", "F32", {4}, 0, 16) + "}",
                                             std::string(12, 'x')));
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("model.safetensors"));
    EXPECT_THAT(m, HasSubstr("tensor \"w\""));
    EXPECT_THAT(m, HasSubstr("run past the end of the data section (12 bytes)"));
}

TEST(SafetensorsErrors, NoSafetensorsAtAll) {
    TempDir dir;
    test::write_config(dir);
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr(dir.path()));
    EXPECT_THAT(m, HasSubstr("no model.safetensors or model.safetensors.index.json"));
}

TEST(SafetensorsErrors, MissingConfigJson) {
    TempDir dir;
    test::write_safetensors(dir.file("model.safetensors"), three_tensors());
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr(dir.file("config.json")));
    EXPECT_THAT(m, HasSubstr("not found"));
}

TEST(SafetensorsErrors, ConfigJsonThatDoesNotParse) {
    TempDir dir;
    test::write_safetensors(dir.file("model.safetensors"), three_tensors());
    test::write_bytes(dir.file("config.json"), R"({"hidden_size": })");
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr(dir.file("config.json")));
    EXPECT_THAT(m, HasSubstr("invalid JSON"));
}

TEST(SafetensorsErrors, GenerationConfigThatDoesNotParse) {
    TempDir dir;
    test::write_config(dir);
    test::write_safetensors(dir.file("model.safetensors"), three_tensors());
    test::write_bytes(dir.file("generation_config.json"), "[");
    EXPECT_THAT(open_error(dir), HasSubstr("generation_config.json"));
}

TEST(SafetensorsErrors, DirectoryThatDoesNotExist) {
    TempDir dir;
    auto source = open_model_directory(dir.file("nope"));
    ASSERT_FALSE(source);
    EXPECT_THAT(source.error().message, HasSubstr(dir.file("nope")));
    EXPECT_THAT(source.error().message, HasSubstr("does not exist"));
    auto empty = open_model_directory("");
    ASSERT_FALSE(empty);
    EXPECT_THAT(empty.error().message, HasSubstr("model directory path is empty"));
    test::write_config(dir);
    auto not_a_directory = open_model_directory(dir.file("config.json"));
    ASSERT_FALSE(not_a_directory);
    EXPECT_THAT(not_a_directory.error().message, HasSubstr("is not a directory"));
}

// Two shards and an index, as Hugging Face writes them.
struct ShardedModel {
    std::vector<SyntheticTensor> first = {
        {"model.layers.0.weight", "BF16", {2, 4}, test::pattern_bytes(16, 11)},
        {"model.embed_tokens.weight", "F32", {3, 2}, test::pattern_bytes(24, 12)},
    };
    std::vector<SyntheticTensor> second = {
        {"model.layers.1.weight", "BF16", {2, 4}, test::pattern_bytes(16, 13)},
        {"lm_head.weight", "U8", {5}, test::pattern_bytes(5, 14)},
    };
    static constexpr const char* kFirst = "model-00001-of-00002.safetensors";
    static constexpr const char* kSecond = "model-00002-of-00002.safetensors";

    static std::string entry(const std::string& tensor, const std::string& shard) {
        std::string e = "\"";
        e += tensor;
        e += "\":\"";
        e += shard;
        e += '"';
        return e;
    }
    std::string index(const std::string& extra_entry = {}) const {
        std::string map;
        const auto add = [&map](const std::string& entry) {
            if (!map.empty()) map += ',';
            map += entry;
        };
        for (const auto& t : first) add(entry(t.name, kFirst));
        for (const auto& t : second) add(entry(t.name, kSecond));
        if (!extra_entry.empty()) add(extra_entry);
        return R"({"metadata": {"total_size": 61}, "weight_map": {)" + map + "}}";
    }
    void write(const TempDir& dir, bool write_second = true) const {
        test::write_config(dir);
        test::write_safetensors(dir.file(kFirst), first);
        if (write_second) test::write_safetensors(dir.file(kSecond), second);
        test::write_bytes(dir.file("model.safetensors.index.json"), index());
    }
};

TEST(SafetensorsSharded, ReadsEveryTensorFromItsShard) {
    TempDir dir;
    const ShardedModel model;
    model.write(dir);
    auto source = open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;
    ASSERT_EQ((*source)->tensors().size(), 4u);
    for (const auto* group : {&model.first, &model.second})
        for (const SyntheticTensor& t : *group) {
            const TensorInfo* info = (*source)->find(t.name);
            ASSERT_NE(info, nullptr) << t.name;
            const char* shard = group == &model.first ? ShardedModel::kFirst : ShardedModel::kSecond;
            EXPECT_EQ(info->file, dir.file(shard));
            EXPECT_EQ(read_all(**source, *info), t.data) << t.name;
        }
}

TEST(SafetensorsSharded, TensorsInAShardButNotInTheIndexAreIncluded) {
    TempDir dir;
    ShardedModel model;
    model.write(dir);
    model.second.push_back({"model.extra", "I8", {3}, test::pattern_bytes(3, 15)});
    test::write_safetensors(dir.file(ShardedModel::kSecond), model.second);
    auto source = open_model_directory(dir.path());
    ASSERT_TRUE(source) << source.error().message;
    ASSERT_NE((*source)->find("model.extra"), nullptr);
    EXPECT_EQ(read_all(**source, *(*source)->find("model.extra")), model.second.back().data);
}

TEST(SafetensorsSharded, MissingShardIsNamed) {
    TempDir dir;
    ShardedModel().write(dir, /*write_second=*/false);
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("model.safetensors.index.json"));
    EXPECT_THAT(m, HasSubstr(std::string("shard \"") + ShardedModel::kSecond + "\""));
    EXPECT_THAT(m, HasSubstr("not found"));
}

TEST(SafetensorsSharded, IndexNamingATensorItsShardLacks) {
    TempDir dir;
    const ShardedModel model;
    model.write(dir);
    test::write_bytes(dir.file("model.safetensors.index.json"),
                      model.index(ShardedModel::entry("model.ghost", ShardedModel::kFirst)));
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("tensor \"model.ghost\""));
    EXPECT_THAT(m, HasSubstr(ShardedModel::kFirst));
    EXPECT_THAT(m, HasSubstr("no such tensor"));
}

TEST(SafetensorsSharded, DuplicateTensorAcrossShardsNamesBoth) {
    TempDir dir;
    ShardedModel model;
    model.write(dir);
    model.second.push_back(model.first.front());
    test::write_safetensors(dir.file(ShardedModel::kSecond), model.second);
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr("\"model.layers.0.weight\""));
    EXPECT_THAT(m, HasSubstr(ShardedModel::kFirst));
    EXPECT_THAT(m, HasSubstr(ShardedModel::kSecond));
}

TEST(SafetensorsSharded, BrokenIndexFiles) {
    struct Case {
        std::string index;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {"{", "invalid JSON"},
        {R"({"metadata": {}})", "\"weight_map\" is missing"},
        {R"({"weight_map": [1]})", "\"weight_map\" must be an object"},
        {R"({"weight_map": {"w": 3}})", "entry for tensor \"w\" must be a string"},
        {R"({"weight_map": {"w": "../other/model.safetensors"}})", "inside the model directory"},
        {R"({"weight_map": {"w": "/etc/passwd"}})", "inside the model directory"},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.index);
        TempDir dir;
        test::write_config(dir);
        test::write_bytes(dir.file("model.safetensors.index.json"), c.index);
        const std::string m = open_error(dir);
        EXPECT_THAT(m, HasSubstr("model.safetensors.index.json"));
        EXPECT_THAT(m, HasSubstr(c.expected));
    }
}

TEST(SafetensorsSharded, BrokenShardIsNamed) {
    TempDir dir;
    ShardedModel().write(dir);
    test::write_bytes(dir.file(ShardedModel::kSecond), "abc");
    const std::string m = open_error(dir);
    EXPECT_THAT(m, HasSubstr(ShardedModel::kSecond));
    EXPECT_THAT(m, HasSubstr("too short"));
}

}  // namespace
}  // namespace stormo
