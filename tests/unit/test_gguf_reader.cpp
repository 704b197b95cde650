// The GGUF reader against files built byte by byte: a valid file reads back exactly, and every
// broken field is refused by an error naming the file and the field or tensor, never a crash or a
// huge allocation.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cstring>
#include <span>

#include "gguf_writer.hpp"
#include "model/gguf.hpp"
#include "model/gguf_split.hpp"
#include "safetensors_writer.hpp"

namespace stormo {
namespace {

using test::GgufBuilder;
using test::GgufTestTensor;
using test::TempDir;
using ::testing::HasSubstr;

constexpr uint32_t kF32 = 0, kF16 = 1, kQ8_0 = 8, kQ4_K = 12;

std::span<const std::byte> as_bytes(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Parses `bytes` expecting an error; returns its message.
std::string parse_error(const std::string& bytes) {
    auto h = parse_gguf(as_bytes(bytes), "model.gguf");
    EXPECT_FALSE(h) << "expected the file to be refused";
    return h ? std::string() : h.error().message;
}

GgufBuilder valid_builder() {
    GgufBuilder b;
    b.kv_str("general.architecture", "gpt-oss")
        .kv_u32("gpt-oss.block_count", 2)
        .kv_f32("gpt-oss.attention.layer_norm_rms_epsilon", 1e-5f)
        .kv_bool("flag", true)
        .kv_strs("tokenizer.ggml.tokens", {"a", "bc", ""})
        .kv_array<int32_t>("tokenizer.ggml.token_type", test::kI32, {1, 3, -2});
    b.tensor({"token_embd.weight", kF32, {4, 3}, test::pattern_bytes(48, 1)});
    b.tensor({"blk.0.ffn_gate_exps.weight", kQ8_0, {64, 2}, test::pattern_bytes(4 * 34, 2)});
    b.tensor({"output_norm.weight", kF16, {4}, test::pattern_bytes(8, 3)});
    return b;
}

TEST(GgufReader, ReadsMetadataAndTensorsOfAValidFile) {
    const std::string bytes = valid_builder().bytes();
    auto h = parse_gguf(as_bytes(bytes), "model.gguf");
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_EQ(h->version, 3u);
    EXPECT_EQ(h->alignment, 32u);
    EXPECT_EQ(h->data_offset % 32, 0u);
    EXPECT_EQ(*h->find("general.architecture")->as_string(), "gpt-oss");
    EXPECT_EQ(*h->find("gpt-oss.block_count")->as_int(), 2);
    EXPECT_EQ(*h->find("gpt-oss.attention.layer_norm_rms_epsilon")->as_float(), static_cast<double>(1e-5f));
    EXPECT_EQ(*h->find("flag")->as_bool(), true);
    const GgufValue* tokens = h->find("tokenizer.ggml.tokens");
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->type_name(), "array of string");
    ASSERT_EQ(tokens->strings.size(), 3u);
    EXPECT_EQ(tokens->strings[1], "bc");
    EXPECT_EQ(tokens->strings[2], "");
    const GgufValue* types = h->find("tokenizer.ggml.token_type");
    EXPECT_EQ(*types->int_at(2), -2);
    EXPECT_FALSE(types->int_at(3));
    EXPECT_FALSE(h->find("general.architecture")->as_int());  // a string is no integer

    ASSERT_EQ(h->tensors.size(), 3u);
    const GgufTensorInfo* q = h->tensor("blk.0.ffn_gate_exps.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->type, GgufType::Q8_0);
    EXPECT_EQ(q->n_dims, 2u);
    EXPECT_EQ(q->ne[0], 64u);
    EXPECT_EQ(q->ne[1], 2u);
    EXPECT_EQ(q->elements, 128u);
    EXPECT_EQ(q->nbytes, 4u * 34);
    EXPECT_EQ(bytes.substr(q->offset, q->nbytes), test::pattern_bytes(4 * 34, 2));
    const GgufTensorInfo* n = h->tensor("output_norm.weight");
    EXPECT_EQ(bytes.substr(n->offset, n->nbytes), test::pattern_bytes(8, 3));
    EXPECT_EQ(h->tensor("missing"), nullptr);
}

TEST(GgufReader, ReadsVersion2AndACustomAlignment) {
    GgufBuilder b = valid_builder();
    b.version = 2;
    b.alignment = 64;
    b.kv_u32("general.alignment", 64);
    const std::string bytes = b.bytes();
    auto h = parse_gguf(as_bytes(bytes), "model.gguf");
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_EQ(h->version, 2u);
    EXPECT_EQ(h->alignment, 64u);
    for (const auto& t : h->tensors) EXPECT_EQ((t.offset - h->data_offset) % 64, 0u) << t.name;
}

TEST(GgufReader, RefusesWrongMagicAndVersions) {
    std::string bytes = valid_builder().bytes();
    std::string bad = bytes;
    bad[0] = 'X';
    EXPECT_THAT(parse_error(bad), HasSubstr("model.gguf: not a GGUF file"));
    EXPECT_THAT(parse_error("GG"), HasSubstr("not a GGUF file"));
    for (uint32_t version : {1u, 4u, 0x03000000u}) {
        GgufBuilder b = valid_builder();
        b.version = version;
        const std::string message = parse_error(b.bytes());
        const char* expected = version == 1 ? "GGUF version 1" : version == 4 ? "unknown GGUF version 4" : "big-endian";
        EXPECT_THAT(message, HasSubstr(expected)) << version;
    }
}

TEST(GgufReader, RefusesCountsTheFileCannotHold) {
    GgufBuilder b = valid_builder();
    b.tensor_count_override = uint64_t{1} << 60;
    EXPECT_THAT(parse_error(b.bytes()), HasSubstr("tensor count 1152921504606846976 cannot fit"));
    GgufBuilder k = valid_builder();
    k.kv_count_override = UINT64_MAX;
    EXPECT_THAT(parse_error(k.bytes()), HasSubstr("key-value count 18446744073709551615 cannot fit"));
}

TEST(GgufReader, RefusesStringAndArrayLengthsPastTheEnd) {
    GgufBuilder b;
    std::string lying;
    test::put_u64(lying, uint64_t{1} << 40);
    b.kv_raw("general.name", test::kString, lying);
    EXPECT_THAT(parse_error(b.bytes()), HasSubstr("key \"general.name\": string length 1099511627776"));

    GgufBuilder a;
    std::string array;
    test::put_u32(array, test::kU64);
    test::put_u64(array, uint64_t{1} << 62);
    a.kv_raw("tokenizer.ggml.scores", test::kArray, array);
    EXPECT_THAT(parse_error(a.bytes()), HasSubstr("key \"tokenizer.ggml.scores\": array of 4611686018427387904 u64 values"));

    GgufBuilder s;
    std::string strings;
    test::put_u32(strings, test::kString);
    test::put_u64(strings, 1000);
    s.kv_raw("tokenizer.ggml.tokens", test::kArray, strings);
    EXPECT_THAT(parse_error(s.bytes()), HasSubstr("array of 1000 string values"));
}

TEST(GgufReader, RefusesBadValueTypes) {
    GgufBuilder b;
    b.kv_raw("weird", 13, "");
    EXPECT_THAT(parse_error(b.bytes()), HasSubstr("key \"weird\": unknown value type 13"));
    GgufBuilder n;
    std::string nested;
    test::put_u32(nested, test::kArray);
    test::put_u64(nested, 0);
    n.kv_raw("nested", test::kArray, nested);
    EXPECT_THAT(parse_error(n.bytes()), HasSubstr("key \"nested\": arrays of arrays are not supported"));
    GgufBuilder t;
    t.kv_raw("flag", test::kBool, std::string(1, '\x02'));
    EXPECT_THAT(parse_error(t.bytes()), HasSubstr("key \"flag\": bool value 2"));
    GgufBuilder d;
    d.kv_u32("a", 1).kv_u32("a", 2);
    EXPECT_THAT(parse_error(d.bytes()), HasSubstr("key \"a\" appears twice"));
    GgufBuilder e;
    e.kv_u32("", 1);
    EXPECT_THAT(parse_error(e.bytes()), HasSubstr("key 0 is empty"));
}

// Integers read as numbers only when a double holds them exactly. Found by the fuzz harness: a
// u64 just below 2^63 became the double 2^63, and casting that back to int64 was undefined.
TEST(GgufReader, IntegersAreNumbersOnlyWhenExact) {
    GgufBuilder b;
    b.kv_u64("big", static_cast<uint64_t>(INT64_MAX)).kv_u64("exact", uint64_t{1} << 53).kv_raw("neg", test::kI64, [] {
        std::string e;
        test::put_raw(e, INT64_MIN);
        return e;
    }());
    const std::string bytes = b.bytes();
    auto h = parse_gguf(as_bytes(bytes), "model.gguf");
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_FALSE(h->find("big")->as_float());
    EXPECT_EQ(*h->find("big")->as_int(), INT64_MAX);
    EXPECT_EQ(*h->find("exact")->as_float(), 0x1p53);
    EXPECT_EQ(*h->find("neg")->as_float(), -0x1p63);
}

TEST(GgufReader, RefusesBadAlignment) {
    GgufBuilder b = valid_builder();
    b.kv_u64("general.alignment", 32);
    EXPECT_THAT(parse_error(b.bytes()), HasSubstr("\"general.alignment\" must be u32, found u64"));
    GgufBuilder c = valid_builder();
    c.kv_u32("general.alignment", 48);
    EXPECT_THAT(parse_error(c.bytes()), HasSubstr("general.alignment 48 is not a power of two"));
    GgufBuilder z = valid_builder();
    z.kv_u32("general.alignment", 0);
    EXPECT_THAT(parse_error(z.bytes()), HasSubstr("general.alignment 0 is not a power of two"));
}

TEST(GgufReader, RefusesBadTensorInfos) {
    auto with = [](GgufTestTensor t) {
        GgufBuilder b;
        b.tensor(std::move(t));
        return parse_error(b.bytes());
    };
    EXPECT_THAT(with({"blk.3.ffn_gate_exps.weight", 99, {32}, std::string(128, '\0')}),
                HasSubstr("model.gguf: tensor \"blk.3.ffn_gate_exps.weight\": unknown ggml type 99"));
    EXPECT_THAT(with({"t", kF32, {1, 1, 1, 1, 1}, std::string(4, '\0')}), HasSubstr("tensor \"t\": n_dims 5 is not in 1..4"));
    EXPECT_THAT(with({"t", kF32, {}, std::string(4, '\0')}), HasSubstr("tensor \"t\": n_dims 0"));
    EXPECT_THAT(with({"t", kF32, {uint64_t{1} << 63}, ""}), HasSubstr("ne[0] 9223372036854775808 is larger than int64"));
    EXPECT_THAT(with({"t", kF32, {uint64_t{1} << 40, uint64_t{1} << 40}, ""}), HasSubstr("shape [1099511627776, 1099511627776] has more elements"));
    EXPECT_THAT(with({"t", kQ8_0, {48, 2}, std::string(128, '\0')}), HasSubstr("ne[0] 48 is not a multiple of Q8_0's block of 32"));
    EXPECT_THAT(with({"t", kQ4_K, {uint64_t{1} << 58, 64}, ""}), HasSubstr("tensor \"t\": shape"));
    EXPECT_THAT(with({"", kF32, {1}, std::string(4, '\0')}), HasSubstr("tensor 0 has an empty name"));
    EXPECT_THAT(with({std::string(64, 'n'), kF32, {1}, std::string(4, '\0')}), HasSubstr("is 64 bytes, more than ggml's 63"));
}

TEST(GgufReader, RefusesTensorRangesOutsideTheDataOrUnaligned) {
    auto one = [](uint64_t offset, uint64_t ne0) {
        GgufBuilder b;
        b.tensor({"blk.3.ffn_gate_exps.weight", kF32, {ne0}, std::string(64, '\0'), offset});
        return parse_error(b.bytes());
    };
    EXPECT_THAT(one(123, 16), HasSubstr("model.gguf: tensor \"blk.3.ffn_gate_exps.weight\": offset 123 not aligned to 32"));
    EXPECT_THAT(one(0, 1000), HasSubstr("tensor \"blk.3.ffn_gate_exps.weight\": 4000 bytes at offset 0 run past the end of the data section (64 bytes"));
    EXPECT_THAT(one(uint64_t{1} << 63, 16), HasSubstr("run past the end of the data section"));

    GgufBuilder o;
    o.tensor({"a", kF32, {32}, std::string(128, '\0'), 0});
    o.tensor({"b", kF32, {8}, std::string(32, '\0'), 96});
    EXPECT_THAT(parse_error(o.bytes()), HasSubstr("tensors \"a\" (bytes"));
    EXPECT_THAT(parse_error(o.bytes()), HasSubstr("and \"b\" (bytes"));
    EXPECT_THAT(parse_error(o.bytes()), HasSubstr("overlap"));

    GgufBuilder d;
    d.tensor({"a", kF32, {8}, std::string(32, '\0')});
    d.tensor({"a", kF32, {8}, std::string(32, '\0')});
    EXPECT_THAT(parse_error(d.bytes()), HasSubstr("tensor \"a\" appears twice"));
}

// Every prefix of a valid file that loses a byte of a tensor is refused with an error (none
// crashes, none reads past its end); only the padding after the last tensor may go. Under the
// sanitizers' fuzz harness too, but here in every test run.
TEST(GgufReader, EveryTruncationIsAnError) {
    const std::string bytes = valid_builder().bytes();
    auto whole = parse_gguf(as_bytes(bytes), "model.gguf");
    ASSERT_TRUE(whole) << whole.error().message;
    uint64_t data_end = 0;
    for (const auto& t : whole->tensors) data_end = std::max(data_end, t.offset + t.nbytes);
    ASSERT_LT(data_end, bytes.size());  // the builder pads the end: some cuts keep every tensor
    for (size_t n = 0; n < bytes.size(); ++n) {
        const std::string prefix = bytes.substr(0, n);
        auto h = parse_gguf(as_bytes(prefix), "model.gguf");
        if (n >= data_end) {
            EXPECT_TRUE(h) << "a cut in the final padding, at " << n << ", was refused";
            continue;
        }
        EXPECT_FALSE(h) << "a file cut at " << n << " of " << bytes.size() << " bytes was accepted";
        if (!h) {
            EXPECT_THAT(h.error().message, HasSubstr("model.gguf")) << n;
        }
    }
}

TEST(GgufReader, AFileWithoutTensorsMayEndAfterItsMetadata) {
    GgufBuilder b;
    b.kv_str("general.architecture", "gpt-oss");
    const std::string bytes = b.bytes();
    auto h = parse_gguf(as_bytes(bytes), "model.gguf");
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_TRUE(h->tensors.empty());
}

TEST(GgufReader, OpensAFileThroughTheMapping) {
    TempDir dir;
    valid_builder().write(dir.file("model.gguf"));
    auto f = GgufFile::open(dir.file("model.gguf"));
    ASSERT_TRUE(f) << f.error().message;
    const GgufTensorInfo* t = f->header().tensor("token_embd.weight");
    ASSERT_NE(t, nullptr);
    const auto b = f->bytes(*t);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), b.size()), test::pattern_bytes(48, 1));
    auto missing = GgufFile::open(dir.file("none.gguf"));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().kind, ErrorKind::missing);
    auto directory = GgufFile::open(dir.path());
    ASSERT_FALSE(directory);
    EXPECT_THAT(directory.error().message, HasSubstr("directory"));
}

// A model split in three as gguf-split writes it: metadata in the first part, tensors spread.
void write_split(const TempDir& dir, int parts, int tensors_count_key, int wrong_no_part = -1) {
    for (int i = 0; i < parts; ++i) {
        GgufBuilder b;
        if (i == 0) b.kv_str("general.architecture", "gpt-oss");
        b.kv_u16("split.no", static_cast<uint16_t>(i == wrong_no_part ? 7 : i));
        b.kv_u16("split.count", static_cast<uint16_t>(parts));
        b.kv_i32("split.tensors.count", tensors_count_key);
        b.tensor({"blk." + std::to_string(i) + ".attn_q.weight", kF32, {8}, test::pattern_bytes(32, i)});
        b.write(dir.file(gguf_split_path("model", i + 1, parts)));
    }
}

TEST(GgufSplit, OpensEveryPartFromAnyOfThem) {
    TempDir dir;
    write_split(dir, 3, 3);
    for (int given : {1, 2}) {
        auto m = GgufModel::open(dir.file(gguf_split_path("model", given, 3)));
        ASSERT_TRUE(m) << m.error().message;
        EXPECT_EQ(m->parts().size(), 3u);
        EXPECT_EQ(m->tensors().size(), 3u);
        EXPECT_EQ(*m->metadata().find("general.architecture")->as_string(), "gpt-oss");
        const GgufTensorRef* t = m->find("blk.2.attn_q.weight");
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(t->file->path(), dir.file("model-00003-of-00003.gguf"));
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(t->bytes().data()), 32), test::pattern_bytes(32, 2));
    }
}

TEST(GgufSplit, RefusesInconsistentParts) {
    {
        TempDir dir;
        write_split(dir, 3, 3);
        std::filesystem::remove(dir.file("model-00002-of-00003.gguf"));
        auto m = GgufModel::open(dir.file("model-00001-of-00003.gguf"));
        ASSERT_FALSE(m);
        EXPECT_THAT(m.error().message, HasSubstr("model-00002-of-00003.gguf"));
    }
    {
        TempDir dir;
        write_split(dir, 3, 4);
        auto m = GgufModel::open(dir.file("model-00001-of-00003.gguf"));
        ASSERT_FALSE(m);
        EXPECT_THAT(m.error().message, HasSubstr("split.tensors.count is 4 but the 3 parts hold 3 tensors"));
    }
    {
        TempDir dir;
        write_split(dir, 2, 2, 1);
        auto m = GgufModel::open(dir.file("model-00001-of-00002.gguf"));
        ASSERT_FALSE(m);
        EXPECT_THAT(m.error().message, HasSubstr("model-00002-of-00002.gguf: split.no is 7 but the name says part 2"));
    }
    {
        TempDir dir;
        write_split(dir, 2, 2);
        std::filesystem::rename(dir.file("model-00001-of-00002.gguf"), dir.file("renamed.gguf"));
        auto m = GgufModel::open(dir.file("renamed.gguf"));
        ASSERT_FALSE(m);
        EXPECT_THAT(m.error().message, HasSubstr("split.count says the model has 2 parts"));
    }
    {
        TempDir dir;
        GgufBuilder b;
        b.kv_u32("split.count", 2);
        b.write(dir.file("model-00001-of-00002.gguf"));
        auto m = GgufModel::open(dir.file("model-00001-of-00002.gguf"));
        ASSERT_FALSE(m);
        EXPECT_THAT(m.error().message, HasSubstr("key \"split.count\" must be u16, found u32"));
    }
}

TEST(GgufSplit, ASingleFileIsAModelOfOnePart) {
    TempDir dir;
    valid_builder().write(dir.file("model.gguf"));
    auto m = GgufModel::open(dir.file("model.gguf"));
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->parts().size(), 1u);
    EXPECT_NE(m->find("output_norm.weight"), nullptr);
}

}  // namespace
}  // namespace stormo
