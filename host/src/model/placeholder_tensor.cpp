#include "model/placeholder_tensor.hpp"

#include <cstring>

namespace stormo {
namespace {

// Below this a buffer may be reused heap memory, so it is cleared; larger ones come fresh from
// mmap, zero and untouched, so a dense part of many GiB costs no RAM until a family reads it.
constexpr size_t kClearBelowBytes = size_t{32} << 20;

}  // namespace

Tensor placeholder_tensor(const TensorInfo& info) {
    Tensor out;
    out.name = info.name;
    out.dtype = info.dtype;
    out.shape = info.shape;
    out.buffer = std::make_shared<AlignedBuffer>(static_cast<size_t>(info.nbytes));
    if (info.nbytes < kClearBelowBytes) std::memset(out.buffer->data(), 0, static_cast<size_t>(info.nbytes));
    return out;
}

}  // namespace stormo
