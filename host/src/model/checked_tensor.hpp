#pragma once
// A tensor a family declared, found in the checkpoint and checked against the declaration: the
// one place dense tensors and expert parts get their "missing" / "has dtype" / "has shape" errors.
#include <string>
#include <vector>

#include "model/model_source.hpp"

namespace stormo {

Expected<const TensorInfo*> checked_tensor(const ModelSource& source, const std::string& name,
                                           const std::vector<DType>& dtypes, const Shape& shape);

}  // namespace stormo
