#pragma once
// A dense tensor's stand-in: the checkpoint's name, dtype and shape over zeros that were never
// read. Given to a family's load where its dense part will never run (the layout probe of
// `convert` and `inspect`; a rank other than 0 of a distributed run, which computes experts only).
#include "model/model_source.hpp"
#include "stormo/tensor.hpp"

namespace stormo {

Tensor placeholder_tensor(const TensorInfo& info);

}  // namespace stormo
