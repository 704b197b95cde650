#include "runtime/host_load_context.hpp"

#include "model/checked_tensor.hpp"

namespace stormo {

Expected<Tensor> HostLoadContext::load(const TensorDecl& decl) {
    auto found = checked_tensor(source_, decl.name, decl.dtypes, decl.shape);
    if (!found) return tl::unexpected(found.error());
    const TensorInfo* t = *found;
    Tensor out;
    out.name = t->name;
    out.dtype = t->dtype;
    out.shape = t->shape;
    out.buffer = std::make_shared<AlignedBuffer>(static_cast<size_t>(t->nbytes));
    if (auto r = source_.read(*t, 0, t->nbytes, out.buffer->data()); !r) return tl::unexpected(r.error());
    loaded_.push_back({decl.name, decl.role, t->nbytes});
    return out;
}

Expected<void> HostLoadContext::declare_experts(int layer, const std::vector<ExpertPartDecl>& parts,
                                                int n_experts) {
    auto layout = resolve_expert_layout(source_, layer, parts, n_experts);
    if (!layout) return tl::unexpected(layout.error());
    expert_layouts_.push_back(std::move(*layout));
    return {};
}

}  // namespace stormo
