#include "runtime/host_load_context.hpp"

#include "model/checked_tensor.hpp"

namespace stormo {

Expected<Tensor> HostLoadContext::load(const TensorDecl& decl) {
    STORMO_TRY_ASSIGN(auto found, checked_tensor(source_, decl.name, decl.dtypes, decl.shape));
    const TensorInfo* t = found;
    Tensor out;
    out.name = t->name;
    out.dtype = t->dtype;
    out.shape = t->shape;
    out.buffer = std::make_shared<AlignedBuffer>(static_cast<size_t>(t->nbytes));
    STORMO_TRY(source_.read(*t, 0, t->nbytes, out.buffer->data()));
    loaded_.push_back({decl.name, decl.role, t->nbytes});
    return out;
}

Expected<void> HostLoadContext::declare_experts(int layer, const std::vector<ExpertPartDecl>& parts,
                                                int n_experts) {
    STORMO_TRY_ASSIGN(auto layout, resolve_expert_layout(source_, layer, parts, n_experts));
    expert_layouts_.push_back(std::move(layout));
    return {};
}

}  // namespace stormo
