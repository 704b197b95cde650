#pragma once
// Which bytes make each routed expert, as the family declares them, without loading the model:
// the family's load runs against a LoadContext that checks every dense tensor against the
// checkpoint but reads none of them (the family gets zeros of the right shape), and resolves the
// expert declarations as the engine does. `stormo convert` lays the container out by it and
// `inspect` counts the reads an expert takes with it.
#include <vector>

#include "model/model_source.hpp"
#include "plugin_loading/selection.hpp"
#include "store/expert_store.hpp"
#include "stormo/family.hpp"

namespace stormo {

struct ExpertLayoutProbe {
    std::vector<ExpertLayerLayout> layouts;  // by layer, as declared
};

// Runs `family`'s load over `source` with the kernels of `kernels` on one thread; the model it
// builds is dropped. A tensor the family needs and the checkpoint lacks is the load's error.
Expected<ExpertLayoutProbe> probe_expert_layouts(const ModelSource& source, const Family& family, const KernelsSelection& kernels);

}  // namespace stormo
