#pragma once
// Choosing the model family for a config.json and the kernels for this CPU (compute/kernel_table.hpp
// builds the table from the choice).
#include <string>
#include <string_view>
#include <vector>

#include "plugin_loading/plugin_registry.hpp"
#include "stormo/cpu_features.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/json.hpp"
#include "stormo/kernels.hpp"

namespace stormo {

// The name of the host's built-in scalar kernels in every listing and option.
inline constexpr const char* kReferenceKernels = "reference";

// A request for a plugin and where it came from ("--kernels", "kernels in my.yaml"), so an
// error can name the option at fault.
struct PluginRequest {
    std::string value = "auto";  // "auto" (or empty) chooses by score
    std::string origin;
};

struct FamilySelection {
    const LoadedPlugin* plugin = nullptr;  // points into the registry
    int score = 0;                         // this config's score (a forced family may score 0)
    bool forced = false;
};

// Highest-scoring model plugin for the config (ties broken by name), or the forced one.
STORMO_API Expected<FamilySelection> select_family(const PluginRegistry& registry,
                                                   const ModelConfig& config,
                                                   const PluginRequest& request);

struct KernelsSelection {
    std::string name = kReferenceKernels;
    const LoadedPlugin* plugin = nullptr;  // nullptr for the reference kernels
    int score = 0;
    bool forced = false;
};

// What a kernels plugin is worth on this CPU: its own score, and 0 when the host sees a feature
// of its description missing (the host's check wins: running it would be SIGILL).
STORMO_API int kernels_score(const LoadedPlugin& plugin, CpuFeatureSet cpu);
// The reference kernels' score here (they need nothing, so they are usable everywhere).
STORMO_API int reference_kernels_score(CpuFeatureSet cpu);

// "auto": the best usable plugin created on this machine (ties broken by name), else the reference. "reference" or a
// plugin name forces it; a forced plugin that is unusable here is an error naming the missing
// CPU features, an unknown name an error listing the available ones.
STORMO_API Expected<KernelsSelection> select_kernels(const PluginRegistry& registry, CpuFeatureSet cpu,
                                                     const PluginRequest& request);

}  // namespace stormo
