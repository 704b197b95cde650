// .npy reading and writing; see npy.hpp. Format: "\x93NUMPY", major, minor, a little-endian header
// length (2 bytes in 1.0, 4 bytes in 2.0/3.0), then a Python dict literal naming descr,
// fortran_order and shape, padded with spaces and a newline, then the raw data.
#include "util/npy.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <optional>

#include "util/file.hpp"

namespace stormo {
namespace {

static_assert(std::endian::native == std::endian::little, "stormo's .npy code assumes a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kPreludeV1 = 10;  // magic, version, u16 length
constexpr size_t kPreludeV2 = 12;  // magic, version, u32 length
constexpr size_t kAlignment = 64;  // numpy pads the header so the data starts 64-byte aligned

struct NpyHeader {
    std::string descr;
    bool fortran_order = false;
    Shape shape;
};

struct Prelude {
    size_t header_begin = 0;
    size_t header_size = 0;
};

// The header dict is a Python literal; this reads the subset numpy writes (quoted keys, quoted
// strings, True/False, tuples of integers) and refuses anything else by name.
class HeaderParser {
public:
    HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

    Expected<NpyHeader> parse() {
        NpyHeader header;
        bool have_descr = false, have_order = false, have_shape = false;
        skip_space();
        if (!consume('{')) return error("header does not start with '{'");
        for (;;) {
            skip_space();
            if (consume('}')) break;
            auto key = quoted();
            if (!key) return tl::unexpected(key.error());
            skip_space();
            if (!consume(':')) return error("expected ':' after key '" + *key + "'");
            skip_space();
            if (*key == "descr") {
                auto v = quoted();
                if (!v) return error("'descr' must be a string (structured dtypes are not supported)");
                header.descr = *v;
                have_descr = true;
            } else if (*key == "fortran_order") {
                auto v = boolean();
                if (!v) return tl::unexpected(v.error());
                header.fortran_order = *v;
                have_order = true;
            } else if (*key == "shape") {
                STORMO_TRY_ASSIGN(auto v, tuple());
                header.shape = std::move(v);
                have_shape = true;
            } else {
                return error("unexpected key '" + *key + "'");
            }
            skip_space();
            if (consume('}')) break;
            if (!consume(',')) return error("expected ',' or '}' after the value of '" + *key + "'");
        }
        if (!have_descr || !have_order || !have_shape)
            return error("header lacks one of 'descr', 'fortran_order', 'shape'");
        return header;
    }

private:
    tl::unexpected<Error> error(const std::string& what) const {
        return fail(ErrorKind::format, name_ + ": invalid .npy header: " + what);
    }
    void skip_space() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    bool consume(char c) {
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }
    bool consume_word(std::string_view word) {
        if (text_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }
    Expected<std::string> quoted() {
        if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return error("expected a quoted string");
        const char quote = text_[pos_++];
        const size_t end = text_.find(quote, pos_);
        if (end == std::string_view::npos) return error("unterminated string");
        std::string s(text_.substr(pos_, end - pos_));
        pos_ = end + 1;
        return s;
    }
    Expected<bool> boolean() {
        if (consume_word("True")) return true;
        if (consume_word("False")) return false;
        return error("'fortran_order' must be True or False");
    }
    Expected<Shape> tuple() {
        if (!consume('(')) return error("'shape' must be a tuple");
        Shape shape;
        for (;;) {
            skip_space();
            if (consume(')')) return shape;
            const size_t begin = pos_;
            int64_t value = 0;
            while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
                const int64_t digit = text_[pos_++] - '0';
                if (value > (INT64_MAX - digit) / 10) return error("'shape' dimension too large");
                value = value * 10 + digit;
            }
            if (pos_ == begin) return error("'shape' must hold non-negative integers");
            // Python 2 era writers appended 'L' to longs.
            consume('L');
            shape.push_back(value);
            skip_space();
            if (consume(')')) return shape;
            if (!consume(',')) return error("expected ',' or ')' in 'shape'");
        }
    }

    std::string_view text_;
    const std::string& name_;
    size_t pos_ = 0;
};

Expected<Prelude> parse_prelude(std::string_view bytes, uint64_t file_size, const std::string& name) {
    if (bytes.size() < kPreludeV1 || bytes.substr(0, kMagic.size()) != kMagic)
        return fail(ErrorKind::format, name + ": not a .npy file (no \\x93NUMPY magic)");
    const auto major = static_cast<unsigned char>(bytes[6]);
    const auto minor = static_cast<unsigned char>(bytes[7]);
    Prelude p;
    if (major == 1) {
        p.header_begin = kPreludeV1;
        p.header_size = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    } else if (major == 2 || major == 3) {
        if (bytes.size() < kPreludeV2) return fail(ErrorKind::format, name + ": truncated .npy header");
        p.header_begin = kPreludeV2;
        for (size_t i = 0; i < 4; ++i) p.header_size |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    } else {
        return fail(ErrorKind::unsupported, name + ": unsupported .npy format version " + std::to_string(major) +
                                                "." + std::to_string(minor));
    }
    if (p.header_begin + p.header_size > file_size)
        return fail(ErrorKind::format, name + ": .npy header length " + std::to_string(p.header_size) +
                                           " runs past the end of the file");
    return p;
}

struct DescrInfo {
    DType dtype;
    size_t size;
};

Expected<DescrInfo> parse_descr(const std::string& descr, const std::string& name) {
    if (descr == "<f4") return DescrInfo{DType::F32, 4};
    if (descr == "<i4") return DescrInfo{DType::I32, 4};
    if (descr == "<i8") return DescrInfo{DType::I64, 8};
    return fail(ErrorKind::unsupported, name + ": unsupported .npy dtype '" + descr + "' (stormo reads <f4, <i4, <i8)");
}

// Checks the header against the data that follows it; returns the data size in bytes.
Expected<size_t> validate(const NpyHeader& header, const DescrInfo& info, uint64_t data_available,
                          const std::string& name) {
    if (header.fortran_order)
        return fail(ErrorKind::unsupported, name + ": Fortran-order .npy arrays are not supported");
    uint64_t count = 1;
    for (int64_t d : header.shape)
        if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count))
            return fail(ErrorKind::format, name + ": .npy shape " + shape_string(header.shape) + " is too large");
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(count, info.size, &nbytes) || nbytes != data_available)
        return fail(ErrorKind::format, name + ": .npy shape " + shape_string(header.shape) + " of " + header.descr +
                                           " needs " + std::to_string(count) + " x " + std::to_string(info.size) +
                                           " bytes, the file holds " + std::to_string(data_available));
    return static_cast<size_t>(nbytes);
}

struct ParsedHead {
    NpyHeader header;
    DescrInfo info{DType::F32, 4};
    size_t data_begin = 0;
    size_t data_size = 0;
};

// `head` holds at least the prelude and the header; `file_size` is the whole file's size.
Expected<ParsedHead> parse_head(std::string_view head, uint64_t file_size, const std::string& name) {
    STORMO_TRY_ASSIGN(auto prelude, parse_prelude(head, file_size, name));
    if (head.size() < prelude.header_begin + prelude.header_size)
        return fail(ErrorKind::internal, name + ": .npy header was not fully read");
    auto header = HeaderParser(head.substr(prelude.header_begin, prelude.header_size), name).parse();
    if (!header) return tl::unexpected(header.error());
    auto info = parse_descr(header->descr, name);
    if (!info) return tl::unexpected(info.error());
    ParsedHead parsed{std::move(*header), *info, prelude.header_begin + prelude.header_size, 0};
    STORMO_TRY_ASSIGN(auto size, validate(parsed.header, parsed.info, file_size - parsed.data_begin, name));
    parsed.data_size = size;
    return parsed;
}

NpyArray make_array(ParsedHead head) {
    NpyArray array;
    array.shape = std::move(head.header.shape);
    array.dtype = head.info.dtype;
    array.bytes.resize(head.data_size);
    return array;
}

std::string header_text(const Shape& shape) {
    std::string dims;
    for (size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) dims += ",";  // a Python one-tuple
    return "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
}

// The prelude plus the padded header, so the data begins at a multiple of 64 bytes.
std::string encode_head(const Shape& shape) {
    const std::string dict = header_text(shape);
    const bool v1 = kPreludeV1 + dict.size() + 1 <= 65535;
    const size_t prelude = v1 ? kPreludeV1 : kPreludeV2;
    const size_t total = (prelude + dict.size() + 1 + kAlignment - 1) / kAlignment * kAlignment;
    const size_t header_size = total - prelude;
    std::string out(kMagic);
    out.push_back(static_cast<char>(v1 ? 1 : 2));
    out.push_back(0);
    const size_t length_bytes = v1 ? 2 : 4;
    for (size_t i = 0; i < length_bytes; ++i) out.push_back(static_cast<char>((header_size >> (8 * i)) & 0xFF));
    out += dict;
    out.append(header_size - dict.size() - 1, ' ');
    out.push_back('\n');
    return out;
}

}  // namespace

size_t NpyArray::size() const {
    const size_t item = dtype_size(dtype);
    return item ? bytes.size() / item : 0;
}

std::vector<float> NpyArray::floats() const { return to_f32(dtype, bytes.data(), size()); }

std::vector<int64_t> NpyArray::ints() const {
    std::vector<int64_t> out(size());
    for (size_t i = 0; i < out.size(); ++i) {
        if (dtype == DType::I64) {
            std::memcpy(&out[i], bytes.data() + i * 8, 8);
        } else if (dtype == DType::I32) {
            int32_t v;
            std::memcpy(&v, bytes.data() + i * 4, 4);
            out[i] = v;
        } else {
            float v;
            std::memcpy(&v, bytes.data() + i * 4, 4);
            // Truncated toward zero; NaN and values beyond int64 (undefined to convert) become 0.
            const bool representable = std::isfinite(v) && std::fabs(v) < 9.2e18f;
            out[i] = representable ? static_cast<int64_t>(v) : 0;
        }
    }
    return out;
}

Expected<NpyArray> parse_npy(std::string_view content, const std::string& name) {
    STORMO_TRY_ASSIGN(auto head, parse_head(content, content.size(), name));
    const size_t begin = head.data_begin;
    NpyArray array = make_array(std::move(head));
    std::memcpy(array.bytes.data(), content.data() + begin, array.bytes.size());
    return array;
}

Expected<NpyArray> read_npy(const std::string& path) {
    STORMO_TRY_ASSIGN(auto file, FileDescriptor::open_read(path));
    STORMO_TRY_ASSIGN(auto file_size, file.size(path));
    // Read the prelude, then exactly the header it announces, then the data straight into place.
    std::string head(std::min<uint64_t>(file_size, kPreludeV2), '\0');
    STORMO_TRY(pread_exact(file.get(), head.data(), head.size(), 0, path));
    STORMO_TRY_ASSIGN(auto prelude, parse_prelude(head, file_size, path));
    head.resize(prelude.header_begin + prelude.header_size);
    STORMO_TRY(pread_exact(file.get(), head.data(), head.size(), 0, path));
    STORMO_TRY_ASSIGN(auto parsed, parse_head(head, file_size, path));
    const size_t begin = parsed.data_begin;
    NpyArray array = make_array(std::move(parsed));
    if (auto r = pread_exact(file.get(), array.bytes.data(), array.bytes.size(), begin, path); !r)
        return tl::unexpected(r.error());
    return array;
}

Expected<void> write_npy(const std::string& path, const Shape& shape, std::span<const float> data) {
    for (int64_t d : shape)
        if (d < 0) return fail(ErrorKind::invalid_argument, path + ": negative dimension in shape " + shape_string(shape));
    if (static_cast<uint64_t>(element_count(shape)) != data.size())
        return fail(ErrorKind::invalid_argument, path + ": shape " + shape_string(shape) + " holds " +
                                                     std::to_string(element_count(shape)) + " elements but " +
                                                     std::to_string(data.size()) + " were given");
    STORMO_TRY_ASSIGN(auto file, FileDescriptor::create(path));
    const std::string head = encode_head(shape);
    if (auto r = write_all(file.get(), head.data(), head.size(), path); !r) return r;
    if (auto r = write_all(file.get(), data.data(), data.size_bytes(), path); !r) return r;
    return file.close(path);
}

}  // namespace stormo
