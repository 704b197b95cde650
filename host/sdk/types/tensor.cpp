// Tensor helpers: element counts, shape text, aligned host buffers, widening to float32.
#include "stormo/tensor.hpp"

#include "stormo/gguf_types.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace stormo {
namespace {
constexpr size_t kHugePageBytes = size_t{2} << 20;
}  // namespace

int64_t element_count(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string shape_string(const Shape& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

AlignedBuffer::AlignedBuffer(size_t nbytes, size_t alignment) : size_(nbytes) {
    // aligned_alloc wants a power-of-two alignment of at least a pointer and a size that is a
    // multiple of it; an empty buffer still gets a valid pointer so memcpy(dst, src, 0) is defined.
    // Large buffers (weights, expert slots) start on a huge-page boundary and ask for huge pages:
    // streaming a matrix then walks 512x fewer page-table entries, and filling a slot arena
    // faults 512x fewer times.
    const bool huge = nbytes >= kHugePageBytes;
    if (huge) alignment = std::max(alignment, kHugePageBytes);
    const size_t align = std::bit_ceil(std::max(alignment, sizeof(void*)));
    const size_t rounded = std::max(align, (nbytes + align - 1) / align * align);
    if (rounded < nbytes) throw std::bad_alloc();
    data_ = static_cast<std::byte*>(std::aligned_alloc(align, rounded));
    if (data_ == nullptr) throw std::bad_alloc();
    if (huge) ::madvise(data_, rounded, MADV_HUGEPAGE);  // advice only: without THP nothing changes
    // The tail past size() is zeroed so vector loops that read a whole last block see zeros.
    std::memset(data_ + nbytes, 0, rounded - nbytes);
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
        std::free(data_);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
    }
    return *this;
}

namespace {

// Reads element i of a little-endian array without assuming the source is aligned.
template <class T>
T load(const std::byte* data, size_t i) {
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof(T));
    return v;
}

template <class T, class Convert>
void widen(const std::byte* data, size_t count, std::vector<float>& out, Convert convert) {
    for (size_t i = 0; i < count; ++i) out[i] = convert(load<T>(data, i));
}

}  // namespace

std::vector<float> to_f32(DType dtype, const std::byte* data, size_t count) {
    std::vector<float> out(count);
    if (count == 0) return out;
    if (is_block_dtype(dtype)) {
        // Whole blocks only: a count inside a block decodes that block's leading values.
        const DTypeBlock b = dtype_block(dtype);
        const size_t whole = (count + b.values - 1) / b.values * b.values;
        std::vector<float> blocks(whole);
        if (!dequantize_gguf(*gguf_type_of(dtype), data, whole, blocks.data())) return {};
        std::copy_n(blocks.begin(), count, out.begin());
        return out;
    }
    switch (dtype) {
        case DType::F32: std::memcpy(out.data(), data, count * sizeof(float)); break;
        case DType::F64: widen<double>(data, count, out, [](double v) { return static_cast<float>(v); }); break;
        case DType::BF16: widen<uint16_t>(data, count, out, bf16_to_f32); break;
        case DType::F16: widen<uint16_t>(data, count, out, f16_to_f32); break;
        case DType::F8_E4M3: widen<uint8_t>(data, count, out, f8_e4m3_to_f32); break;
        // E5M2 is the upper byte of an IEEE half.
        case DType::F8_E5M2:
            widen<uint8_t>(data, count, out, [](uint8_t v) { return f16_to_f32(static_cast<uint16_t>(v << 8)); });
            break;
        case DType::I64: widen<int64_t>(data, count, out, [](int64_t v) { return static_cast<float>(v); }); break;
        case DType::I32: widen<int32_t>(data, count, out, [](int32_t v) { return static_cast<float>(v); }); break;
        case DType::I16: widen<int16_t>(data, count, out, [](int16_t v) { return static_cast<float>(v); }); break;
        case DType::I8: widen<int8_t>(data, count, out, [](int8_t v) { return static_cast<float>(v); }); break;
        case DType::U8: widen<uint8_t>(data, count, out, [](uint8_t v) { return static_cast<float>(v); }); break;
        case DType::BOOL: widen<uint8_t>(data, count, out, [](uint8_t v) { return v ? 1.0f : 0.0f; }); break;
        case DType::GGUF_Q8_0:
        case DType::GGUF_Q4_0:
        case DType::GGUF_Q4_K:
        case DType::GGUF_Q5_K:
        case DType::GGUF_Q6_K:
        case DType::GGUF_MXFP4:
        case DType::GGUF_Q4_1:
        case DType::GGUF_Q5_0:
        case DType::GGUF_Q5_1:
        case DType::GGUF_Q2_K:
        case DType::GGUF_Q3_K:
        case DType::GGUF_IQ4_NL:
        case DType::GGUF_IQ4_XS:
        case DType::GGUF_IQ2_XXS:
        case DType::GGUF_IQ2_XS:
        case DType::GGUF_IQ2_S:
        case DType::GGUF_IQ3_XXS:
        case DType::GGUF_IQ3_S:
        case DType::GGUF_IQ1_S:
        case DType::GGUF_IQ1_M: break;  // decoded above
    }
    return out;
}

std::vector<float> to_f32(const Tensor& t) {
    const DTypeBlock block = dtype_block(t.dtype);
    const int64_t declared = element_count(t.shape);
    // Never read past the buffer, even if shape and buffer disagree.
    size_t count = declared > 0 ? static_cast<size_t>(declared) : 0;
    if (block.bytes == 0) return {};
    count = std::min(count, t.nbytes() / block.bytes * block.values);
    return to_f32(t.dtype, t.bytes(), count);
}

}  // namespace stormo
