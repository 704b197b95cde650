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
// Behind the C names the objects are the C++ interfaces below. The ABI string holds the SDK
// version and the compiler and standard-library identity, because C++ objects cross the boundary.
#include <memory>
#include <string>
#include <vector>

#include "stormo/cpu_features.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/json.hpp"
#include "stormo/version.hpp"

namespace stormo {

enum class PluginKind : int { model = 1, kernels = 2 };
STORMO_API const char* plugin_kind_name(PluginKind k);

struct PluginDescription {
    const char* name;        // "gpt_oss", "avx2": unique among loaded plugins
    PluginKind kind;
    const char* version;     // the plugin's own version
    const char* summary;     // one line for `stormo plugins`
    // model plugins: the `architectures` / `model_type` values accepted, comma-separated.
    const char* accepts;
    // kernels plugins: the CPU features compiled for, comma-separated names (cpu_feature_name).
    const char* cpu_features;
};

struct ScoreQuery {
    const ModelConfig* config = nullptr;  // model plugins
    CpuFeatureSet cpu;                     // kernels plugins
};

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
