#include <string>

#include "model/checked_tensor.hpp"
#include "store/expert_store.hpp"

namespace stormo {
namespace {

std::string expert_tensor_name(const std::string& pattern, int expert) {
    std::string name = pattern;
    const auto at = name.find("{e}");
    if (at != std::string::npos) name.replace(at, 3, std::to_string(expert));
    return name;
}

}  // namespace

uint64_t ExpertLayerLayout::bytes_per_expert() const {
    for (const auto& expert : locations) {
        if (expert.empty()) continue;
        uint64_t total = 0;
        for (const auto& loc : expert) total += loc.nbytes;
        return total;
    }
    return 0;
}

uint64_t ExpertLayerLayout::held_bytes() const {
    uint64_t total = 0;
    for (const auto& expert : locations)
        for (const auto& loc : expert) total += loc.nbytes;
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
            for (int e = 0; e < n_experts; ++e) {
                const uint64_t offset = slice * static_cast<uint64_t>(e);
                STORMO_TRY_ASSIGN(const uint64_t in_file, source.file_offset(**t, offset, slice));
                layout.locations[static_cast<size_t>(e)].push_back({*t, offset, slice, in_file});
            }
        } else {
            for (int e = 0; e < n_experts; ++e) {
                STORMO_TRY_ASSIGN(auto t, checked_tensor(source, expert_tensor_name(part.tensor, e), part.dtypes, part.expert_shape));
                layout.locations[static_cast<size_t>(e)].push_back({t, 0, t->nbytes, std::nullopt});
            }
        }
    }
    return layout;
}

}  // namespace stormo
