#include <string>

#include "store/expert_store.hpp"

namespace stormo {
namespace {

std::string expert_tensor_name(const std::string& pattern, int expert) {
    std::string name = pattern;
    const auto at = name.find("{e}");
    if (at != std::string::npos) name.replace(at, 3, std::to_string(expert));
    return name;
}

bool dtype_accepted(const std::vector<DType>& accepted, DType d) {
    for (DType a : accepted)
        if (a == d) return true;
    return false;
}

std::string dtype_list(const std::vector<DType>& accepted) {
    std::string out;
    for (DType a : accepted) out += (out.empty() ? "" : " or ") + std::string(dtype_name(a));
    return out;
}

Expected<const TensorInfo*> checked_tensor(const ModelSource& source, const std::string& name,
                                           const std::vector<DType>& dtypes, const Shape& shape) {
    const TensorInfo* t = source.find(name);
    if (!t) return fail(ErrorKind::missing, source.directory() + ": tensor \"" + name + "\" is missing");
    if (!dtype_accepted(dtypes, t->dtype))
        return fail(ErrorKind::mismatch, source.directory() + ": tensor \"" + name + "\" has dtype " +
                                             std::string(dtype_name(t->dtype)) + ", expected " + dtype_list(dtypes));
    if (t->shape != shape)
        return fail(ErrorKind::mismatch, source.directory() + ": tensor \"" + name + "\" has shape " +
                                             shape_string(t->shape) + ", expected " + shape_string(shape));
    return t;
}

}  // namespace

uint64_t ExpertLayerLayout::bytes_per_expert() const {
    uint64_t total = 0;
    if (!locations.empty())
        for (const auto& loc : locations.front()) total += loc.nbytes;
    return total;
}

Expected<ExpertLayerLayout> resolve_expert_layout(const ModelSource& source, int layer,
                                                  const std::vector<ExpertPartDecl>& parts,
                                                  int n_experts) {
    if (n_experts <= 0)
        return fail(ErrorKind::invalid_argument, "layer " + std::to_string(layer) + ": no experts declared");
    ExpertLayerLayout layout;
    layout.layer = layer;
    layout.parts = parts;
    layout.locations.assign(static_cast<size_t>(n_experts), {});
    for (const auto& part : parts) {
        if (part.fused) {
            Shape full{n_experts};
            full.insert(full.end(), part.expert_shape.begin(), part.expert_shape.end());
            auto t = checked_tensor(source, part.tensor, part.dtypes, full);
            if (!t) return tl::unexpected(t.error());
            const uint64_t slice = (*t)->nbytes / static_cast<uint64_t>(n_experts);
            for (int e = 0; e < n_experts; ++e)
                layout.locations[static_cast<size_t>(e)].push_back({*t, slice * static_cast<uint64_t>(e), slice});
        } else {
            for (int e = 0; e < n_experts; ++e) {
                auto t = checked_tensor(source, expert_tensor_name(part.tensor, e), part.dtypes, part.expert_shape);
                if (!t) return tl::unexpected(t.error());
                layout.locations[static_cast<size_t>(e)].push_back({*t, 0, (*t)->nbytes});
            }
        }
    }
    return layout;
}

}  // namespace stormo
