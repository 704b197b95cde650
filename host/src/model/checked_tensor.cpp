#include "model/checked_tensor.hpp"

#include <algorithm>

#include "stormo/quote.hpp"

namespace stormo {

Expected<const TensorInfo*> checked_tensor(const ModelSource& source, const std::string& name,
                                           const std::vector<DType>& dtypes, const Shape& shape) {
    const std::string what = source.directory() + ": tensor " + in_quotes(name);
    const TensorInfo* t = source.find(name);
    if (!t) return fail(ErrorKind::missing, what + " is missing");
    if (std::find(dtypes.begin(), dtypes.end(), t->dtype) == dtypes.end()) {
        std::string wanted;
        for (DType d : dtypes) {
            if (!wanted.empty()) wanted += " or ";
            wanted += dtype_name(d);
        }
        return fail(ErrorKind::mismatch, what + " has dtype " + std::string(dtype_name(t->dtype)) + ", expected " + wanted);
    }
    if (t->shape != shape)
        return fail(ErrorKind::mismatch, what + " has shape " + shape_string(t->shape) + ", expected " + shape_string(shape));
    return t;
}

}  // namespace stormo
