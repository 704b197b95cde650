#include "runtime/host_load_context.hpp"

namespace stormo {

Expected<Tensor> HostLoadContext::load(const TensorDecl& decl) {
    const TensorInfo* t = source_.find(decl.name);
    if (!t) return fail(ErrorKind::missing, source_.directory() + ": tensor \"" + decl.name + "\" is missing");
    bool dtype_ok = false;
    std::string wanted;
    for (DType d : decl.dtypes) {
        dtype_ok = dtype_ok || d == t->dtype;
        wanted += (wanted.empty() ? "" : " or ") + std::string(dtype_name(d));
    }
    if (!dtype_ok)
        return fail(ErrorKind::mismatch, source_.directory() + ": tensor \"" + decl.name + "\" has dtype " +
                                             std::string(dtype_name(t->dtype)) + ", expected " + wanted);
    if (t->shape != decl.shape)
        return fail(ErrorKind::mismatch, source_.directory() + ": tensor \"" + decl.name + "\" has shape " +
                                             shape_string(t->shape) + ", expected " + shape_string(decl.shape));
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
