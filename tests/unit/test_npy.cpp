// .npy writing (float32, v1.0) and reading (float32/int32/int64, v1.0 and v2.0 headers).
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>
#include <limits>

#include "safetensors_writer.hpp"
#include "util/file.hpp"
#include "util/npy.hpp"

namespace stormo {
namespace {

using ::testing::HasSubstr;

std::vector<float> ramp(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.25f - 3.0f;
    return v;
}

// A .npy file built by hand: version, header dict and raw data.
std::string npy_bytes(int major, const std::string& dict, const std::string& data) {
    std::string out = "\x93NUMPY";
    out.push_back(static_cast<char>(major));
    out.push_back(0);
    const size_t length_bytes = major == 1 ? 2 : 4;
    const std::string header = dict + "\n";
    for (size_t i = 0; i < length_bytes; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
    return out + header + data;
}

template <class T>
std::string raw(const std::vector<T>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST(NpyWrite, RoundTripsShapesAndValues) {
    test::TempDir dir;
    const std::vector<Shape> shapes = {{}, {5}, {3, 4}, {2, 3, 4}, {0, 7}};
    for (const Shape& shape : shapes) {
        SCOPED_TRACE(shape_string(shape));
        std::vector<float> data = ramp(static_cast<size_t>(element_count(shape)));
        if (!data.empty()) data.back() = std::numeric_limits<float>::infinity();
        const std::string path = dir.file("a.npy");
        ASSERT_TRUE(write_npy(path, shape, data));
        auto back = read_npy(path);
        ASSERT_TRUE(back) << back.error().message;
        EXPECT_EQ(back->shape, shape);
        EXPECT_EQ(back->dtype, DType::F32);
        EXPECT_EQ(back->size(), data.size());
        EXPECT_EQ(back->floats(), data);
    }
}

TEST(NpyWrite, WritesVersion1LittleEndianCOrderAlignedTo64) {
    test::TempDir dir;
    const std::string path = dir.file("logits.npy");
    ASSERT_TRUE(write_npy(path, {2, 3}, ramp(6)));
    auto bytes = read_file(path);
    ASSERT_TRUE(bytes);
    ASSERT_GE(bytes->size(), 10u);
    EXPECT_EQ(bytes->substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const size_t header = static_cast<unsigned char>((*bytes)[8]) | (static_cast<unsigned char>((*bytes)[9]) << 8);
    EXPECT_EQ((10 + header) % 64, 0u);
    EXPECT_EQ(bytes->size(), 10 + header + 6 * sizeof(float));
    EXPECT_THAT(bytes->substr(10, header), HasSubstr("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"));
    EXPECT_EQ((*bytes)[10 + header - 1], '\n');
    auto one_d = parse_npy(*bytes, "x");
    ASSERT_TRUE(one_d);
    ASSERT_TRUE(write_npy(path, {4}, ramp(4)));
    EXPECT_THAT(*read_file(path), HasSubstr("'shape': (4,), }"));
}

TEST(NpyWrite, RefusesAShapeThatDoesNotMatchTheData) {
    test::TempDir dir;
    auto r = write_npy(dir.file("x.npy"), {2, 3}, ramp(5));
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("x.npy"));
    EXPECT_THAT(r.error().message, HasSubstr("[2, 3]"));
    auto unwritable = write_npy(dir.file("no/such/dir/x.npy"), {1}, ramp(1));
    ASSERT_FALSE(unwritable);
    EXPECT_THAT(unwritable.error().message, HasSubstr("no/such/dir/x.npy"));
}

TEST(NpyRead, FixtureLogitsAndRouterIndices) {
    const std::string ref = std::string(STORMO_TEST_DATA_DIR) + "/fixtures/gpt_oss/reference/";
    auto logits = read_npy(ref + "logits.npy");
    ASSERT_TRUE(logits) << logits.error().message;
    EXPECT_EQ(logits->dtype, DType::F32);
    EXPECT_EQ(logits->shape, (Shape{56, 1024}));
    const auto values = logits->floats();
    ASSERT_EQ(values.size(), 56u * 1024u);
    EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); }));
    EXPECT_TRUE(std::any_of(values.begin(), values.end(), [](float v) { return v != 0.0f; }));

    auto idx = read_npy(ref + "router_topk_idx.npy");
    ASSERT_TRUE(idx) << idx.error().message;
    EXPECT_EQ(idx->dtype, DType::I32);
    EXPECT_EQ(idx->shape, (Shape{4, 56, 2}));
    const auto ids = idx->ints();
    ASSERT_EQ(ids.size(), 4u * 56u * 2u);
    // gpt_oss fixture: 8 experts, top-2, two different experts per row.
    for (size_t row = 0; row < ids.size(); row += 2) {
        EXPECT_GE(ids[row], 0);
        EXPECT_LT(ids[row], 8);
        EXPECT_NE(ids[row], ids[row + 1]);
    }

    auto hidden = read_npy(ref + "hidden.npy");
    ASSERT_TRUE(hidden) << hidden.error().message;
    EXPECT_EQ(hidden->shape, (Shape{5, 56, 64}));
}

TEST(NpyRead, Int64AndVersion2Headers) {
    const std::vector<int64_t> values = {1, -2, int64_t{1} << 40};
    auto v1 = parse_npy(npy_bytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", raw(values)), "i8.npy");
    ASSERT_TRUE(v1) << v1.error().message;
    EXPECT_EQ(v1->dtype, DType::I64);
    EXPECT_EQ(v1->ints(), values);

    const std::vector<int32_t> ints = {7, -8, 9, 10};
    auto v2 = parse_npy(npy_bytes(2, "{\"descr\": \"<i4\", \"shape\": (2, 2), \"fortran_order\": False}", raw(ints)), "v2.npy");
    ASSERT_TRUE(v2) << v2.error().message;
    EXPECT_EQ(v2->shape, (Shape{2, 2}));
    EXPECT_EQ(v2->ints(), (std::vector<int64_t>{7, -8, 9, 10}));
    EXPECT_EQ(v2->floats(), (std::vector<float>{7, -8, 9, 10}));

    test::TempDir dir;
    test::write_bytes(dir.file("v2.npy"), npy_bytes(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                                   raw(std::vector<float>{0.5f, -1.0f})));
    auto from_file = read_npy(dir.file("v2.npy"));
    ASSERT_TRUE(from_file) << from_file.error().message;
    EXPECT_EQ(from_file->floats(), (std::vector<float>{0.5f, -1.0f}));
}

TEST(NpyRead, ErrorsNameTheFile) {
    struct Case {
        std::string bytes;
        std::string expected;
    };
    const std::string f4 = raw(std::vector<float>{1, 2});
    const std::vector<Case> cases = {
        {"not an npy file at all", "not a .npy file"},
        {npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4), "unsupported .npy dtype '>f4'"},
        {npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", f4), "unsupported .npy dtype '<f8'"},
        {npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", f4), "Fortran-order"},
        {npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f4), "the file holds 8"},
        {npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f4), "the file holds 8"},
        {npy_bytes(1, "{'descr': '<f4', 'shape': (2,), }", f4), "lacks one of"},
        {npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", f4), "must be a tuple"},
        {npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f4), "unexpected key 'x'"},
        {npy_bytes(9, "{}", ""), "unsupported .npy format version 9.0"},
        {std::string("\x93NUMPY\x01\x00\xff\x00{", 11), "runs past the end of the file"},
    };
    test::TempDir dir;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.expected);
        const std::string path = dir.file("bad.npy");
        test::write_bytes(path, c.bytes);
        auto r = read_npy(path);
        ASSERT_FALSE(r);
        EXPECT_THAT(r.error().message, HasSubstr(path));
        EXPECT_THAT(r.error().message, HasSubstr(c.expected));
        auto in_memory = parse_npy(c.bytes, "mem.npy");
        ASSERT_FALSE(in_memory);
        EXPECT_THAT(in_memory.error().message, HasSubstr("mem.npy"));
    }
    auto missing = read_npy(dir.file("absent.npy"));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().kind, ErrorKind::missing);
    EXPECT_THAT(missing.error().message, HasSubstr(dir.file("absent.npy")));
}

}  // namespace
}  // namespace stormo
