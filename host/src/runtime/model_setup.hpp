#pragma once
// The first steps of every model run: find the plugins, open the model directory, choose the
// family for its config.json and the kernels for this CPU. Shared by the engine and `inspect`.
#include <memory>
#include <string>

#include "model/model_source.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "plugin_loading/selection.hpp"
#include "stormo/cpu_features.hpp"

namespace stormo {

struct SetupRequest {
    std::string model_dir;
    // The model already opened from model_dir (a ModelBundle's source), so it is not opened
    // twice; empty: open_model_setup opens model_dir.
    std::shared_ptr<ModelSource> opened;
    std::string model_origin = "--model";
    PluginSearch search;
    PluginRequest family{"auto", "--family"};
    PluginRequest kernels{"auto", "--kernels"};
};

// Not copyable or movable: the selections point into the registry.
struct ModelSetup {
    PluginRegistry registry;
    CpuFeatureSet cpu;
    std::shared_ptr<ModelSource> source;
    FamilySelection family;
    KernelsSelection kernels;

    ModelSetup() = default;
    ModelSetup(const ModelSetup&) = delete;
    ModelSetup& operator=(const ModelSetup&) = delete;
};

Expected<void> open_model_setup(const SetupRequest& request, ModelSetup& out);

}  // namespace stormo
