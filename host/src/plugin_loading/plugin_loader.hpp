#pragma once
// Opening one plugin library and checking it against the ABI, before anything of it is used.
#include <optional>
#include <string>
#include <string_view>

#include "plugin_loading/plugin_registry.hpp"
#include "stormo/error.hpp"
#include "stormo/family_plugin.hpp"
#include "stormo/kernels_plugin.hpp"

namespace stormo {

// What a plugin's file name promises: libstormo-<kind>-<name>.so.
struct PluginFileName {
    PluginKind kind = PluginKind::model;
    std::string name;
};

// nullopt when the file name is not libstormo-model-<name>.so or libstormo-kernels-<name>.so.
STORMO_API std::optional<PluginFileName> parse_plugin_file_name(std::string_view file_name);

// dlopens the library (lazy, local), checks the entry points, the ABI string, the description
// against the file name, and calls the factory (for a kernels plugin only when it can run on
// `cpu`). The error message is the reason it is refused.
Expected<LoadedPlugin> load_plugin(const std::string& path, const PluginFileName& expected, CpuFeatureSet cpu);

}  // namespace stormo
