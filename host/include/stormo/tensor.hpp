#pragma once
// Tensors as plugins see them: shapes, and tensors resident in owned host buffers. Where a tensor
// lives in a checkpoint (files, offsets) is the host's business (model/model_source.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stormo/dtype.hpp"
#include "stormo/export.hpp"

namespace stormo {

using Shape = std::vector<int64_t>;

STORMO_API int64_t element_count(const Shape& shape);
STORMO_API std::string shape_string(const Shape& shape);  // "[8, 64, 2, 16]"

// A 64-byte aligned host buffer; move-only, shared through shared_ptr when several views need it.
class STORMO_API AlignedBuffer {
public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(size_t nbytes, size_t alignment = 64);
    ~AlignedBuffer();
    AlignedBuffer(AlignedBuffer&& o) noexcept;
    AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
    AlignedBuffer(const AlignedBuffer&) = delete;
    AlignedBuffer& operator=(const AlignedBuffer&) = delete;

    std::byte* data() { return data_; }
    const std::byte* data() const { return data_; }
    size_t size() const { return size_; }

private:
    std::byte* data_ = nullptr;
    size_t size_ = 0;
};

// A tensor resident in host memory, in its checkpoint dtype (never silently widened).
struct Tensor {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    std::shared_ptr<AlignedBuffer> buffer;

    const std::byte* bytes() const { return buffer ? buffer->data() : nullptr; }
    size_t nbytes() const { return buffer ? buffer->size() : 0; }
    template <class T>
    const T* as() const { return reinterpret_cast<const T*>(bytes()); }
    int64_t dim(size_t i) const { return shape.at(i); }
};

// Widens a small resident tensor (norm weights, biases, sinks) to float32; a block type (GGUF_*)
// decodes whole blocks as stormo/gguf_types.hpp's reference dequantizer does.
STORMO_API std::vector<float> to_f32(const Tensor& t);
STORMO_API std::vector<float> to_f32(DType dtype, const std::byte* data, size_t count);

}  // namespace stormo
