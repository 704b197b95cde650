#include "runtime/host_load_context.hpp"

#include "model/checked_tensor.hpp"
#include "model/placeholder_tensor.hpp"
#include "util/quoted_list.hpp"

namespace stormo {

Expected<Tensor> HostLoadContext::load(const TensorDecl& decl) {
    STORMO_TRY_ASSIGN(auto found, checked_tensor(source_, decl.name, decl.dtypes, decl.shape));
    const TensorInfo* t = found;
    used_.insert(t->name);
    if (dense_ == DenseWeights::placeholders) {
        loaded_.push_back({decl.name, decl.role, 0, false, t->nbytes});
        return placeholder_tensor(*t);
    }
    Tensor out;
    out.name = t->name;
    out.dtype = t->dtype;
    out.shape = t->shape;
    out.buffer = std::make_shared<AlignedBuffer>(static_cast<size_t>(t->nbytes));
    STORMO_TRY(source_.read(*t, 0, t->nbytes, out.buffer->data()));
    loaded_.push_back({decl.name, decl.role, t->nbytes, false});
    if (meter_) meter_->add(t->nbytes);
    return out;
}

namespace {

// Packed only where that saves 5% of the bytes at least: a matrix whose rows need many patches
// (values spread over many exponents), or of rows under 64 values, stays BF16.
constexpr double kMaxPackedRatio = 0.95;

}  // namespace

std::optional<packed_bf16::Packed> HostLoadContext::pack_bf16(const std::string& name, const WeightView& bf16) {
    if (!pack_bf16_ || dense_ == DenseWeights::placeholders) return std::nullopt;
    std::optional<packed_bf16::Packed> packed = packed_bf16::pack(bf16, compute_.pool, kMaxPackedRatio);
    if (!packed) return std::nullopt;
    for (auto it = loaded_.rbegin(); it != loaded_.rend(); ++it)
        if (it->name == name) {
            it->nbytes = packed->storage->size();
            it->packed = true;
            break;
        }
    return packed;
}

Expected<void> HostLoadContext::declare_experts(int layer, const std::vector<ExpertPartDecl>& parts,
                                                int n_experts) {
    STORMO_TRY_ASSIGN(auto layout, resolve_expert_layout(source_, layer, parts, n_experts));
    note_expert_tensors(layout, used_);
    expert_layouts_.push_back(std::move(layout));
    return {};
}

void note_expert_tensors(const ExpertLayerLayout& layout, std::set<std::string, std::less<>>& used) {
    for (const auto& expert : layout.locations)
        for (const ExpertPartLocation& part : expert)
            if (part.tensor != nullptr) used.insert(part.tensor->name);
}

Expected<void> check_every_tensor_used(const ModelSource& source, const std::set<std::string, std::less<>>& used,
                                       const std::vector<std::string>& draft_layers, const std::string& model_dir) {
    std::vector<std::string> unused;
    for (const TensorInfo& t : source.tensors()) {
        if (used.contains(t.name) || t.name.ends_with(".rotary_emb.inv_freq")) continue;
        bool draft = false;
        for (const std::string& prefix : draft_layers) draft = draft || t.name.starts_with(prefix);
        if (!draft) unused.push_back(t.name);
    }
    if (unused.empty()) return {};
    return fail(ErrorKind::format, model_dir + ": " + std::to_string(unused.size()) + " of the checkpoint's " +
                                       std::to_string(source.tensors().size()) +
                                       " tensors are not part of the model config.json describes (" + quoted_list(unused) +
                                       "): config.json (num_hidden_layers, expert counts, shared experts) and the weights "
                                       "disagree");
}

}  // namespace stormo
