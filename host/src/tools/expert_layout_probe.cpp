// probe_expert_layouts: see expert_layout_probe.hpp.
#include "tools/expert_layout_probe.hpp"

#include "compute/kernel_table.hpp"
#include "compute/worker_pool.hpp"
#include "model/checked_tensor.hpp"
#include "model/placeholder_tensor.hpp"
#include "runtime/host_load_context.hpp"  // check_every_tensor_used, note_expert_tensors

namespace stormo {
namespace {

class DeclarationContext final : public LoadContext {
public:
    DeclarationContext(const ModelSource& source, Compute compute) : source_(source), compute_(compute) {}

    const ModelConfig& config() const override { return source_.config(); }
    const std::optional<ModelConfig>& generation_config() const override { return source_.generation_config(); }
    bool has_tensor(std::string_view name) const override { return source_.find(name) != nullptr; }

    Expected<Tensor> load(const TensorDecl& decl) override {
        STORMO_TRY_ASSIGN(const TensorInfo* t, checked_tensor(source_, decl.name, decl.dtypes, decl.shape));
        used_.insert(t->name);
        return placeholder_tensor(*t);
    }

    Expected<void> declare_experts(int layer, const std::vector<ExpertPartDecl>& parts, int n_experts) override {
        STORMO_TRY_ASSIGN(auto layout, resolve_expert_layout(source_, layer, parts, n_experts));
        note_expert_tensors(layout, used_);
        layouts_.push_back(std::move(layout));
        return {};
    }

    Compute compute() const override { return compute_; }
    std::vector<ExpertLayerLayout>& layouts() { return layouts_; }
    const std::set<std::string, std::less<>>& used() const { return used_; }

private:
    const ModelSource& source_;
    Compute compute_;
    std::vector<ExpertLayerLayout> layouts_;
    std::set<std::string, std::less<>> used_;
};

}  // namespace

Expected<ExpertLayoutProbe> probe_expert_layouts(const ModelSource& source, const Family& family, const KernelsSelection& kernels) {
    const KernelTable table = build_kernel_table(kernels);
    WorkerPool pool(1);
    DeclarationContext context(source, Compute{&table, &pool, false});
    STORMO_TRY(family.load(context).map([](auto&&) {}));
    // A checkpoint holding more than its config describes is refused here as the engine refuses
    // it: convert would copy the rest as experts no list names, inspect would count it.
    STORMO_TRY_ASSIGN(const ModelSummary summary, family.summarize(source.config()));
    STORMO_TRY(check_every_tensor_used(source, context.used(), summary.draft_layers, source.directory()));
    return ExpertLayoutProbe{std::move(context.layouts())};
}

}  // namespace stormo
