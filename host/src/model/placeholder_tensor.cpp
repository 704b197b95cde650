#include "model/placeholder_tensor.hpp"

#include <cstring>

namespace stormo {

Tensor placeholder_tensor(const TensorInfo& info) {
    Tensor out;
    out.name = info.name;
    out.dtype = info.dtype;
    out.shape = info.shape;
    out.buffer = std::make_shared<AlignedBuffer>(static_cast<size_t>(info.nbytes));
    if (info.nbytes < kPlaceholderClearBelowBytes) std::memset(out.buffer->data(), 0, static_cast<size_t>(info.nbytes));
    return out;
}

}  // namespace stormo
