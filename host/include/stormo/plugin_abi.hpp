#pragma once
// The plugin ABI shared by both kinds of plugin (family plugins include stormo/family_plugin.hpp,
// kernels plugins stormo/kernels_plugin.hpp). Every plugin is a shared library named libstormo-model-<family>.so or
// libstormo-kernels-<isa>.so exporting four C entry points:
//
//   const char* stormo_plugin_abi();                      // must equal kStormoAbi
//   const stormo::PluginDescription* stormo_plugin_describe();
//   int stormo_plugin_score(const stormo::ScoreQuery*);   // 0 = unusable / not mine
//   stormo::PluginObject* stormo_plugin_create(stormo::Error* error);  // nullptr + error on failure
//
// Behind the C names the objects are the C++ interfaces below. The ABI string (stormo/abi.hpp)
// holds the SDK version, the compiler and standard library, the tl-expected version, the debug
// macros and a hash of every boundary struct's layout, because C++ objects cross the boundary.
#include <memory>
#include <string>
#include <vector>

#include "stormo/cpu_features.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/json.hpp"
#include "stormo/abi.hpp"
#include "stormo/version.hpp"

namespace stormo {

STORMO_API const char* plugin_kind_name(PluginKind k);

class STORMO_API PluginObject {
public:
    virtual ~PluginObject();
};

// Scores a config.json by the comma-separated `accepts` list: 100 for an `architectures` match,
// 50 for a `model_type` match, else 0.
STORMO_API int score_model_config(const ModelConfig& config, const char* accepts);

}  // namespace stormo

extern "C" {
using stormo_plugin_abi_fn = const char* (*)();
using stormo_plugin_describe_fn = const stormo::PluginDescription* (*)();
using stormo_plugin_score_fn = int (*)(const stormo::ScoreQuery*);
using stormo_plugin_create_fn = stormo::PluginObject* (*)(stormo::Error*);
}

#define STORMO_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

// Defines stormo_plugin_abi for this plugin (the others are the plugin's own).
#define STORMO_DEFINE_PLUGIN_ABI() \
    STORMO_PLUGIN_EXPORT const char* stormo_plugin_abi() { return ::stormo::kStormoAbi; }
