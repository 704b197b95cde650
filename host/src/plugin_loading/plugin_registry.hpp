#pragma once
// The plugins found at start-up: discovery over the search directories, one LoadedPlugin per
// accepted library and one RejectedPlugin (with its reason) per refused one. The registry owns
// every library; the objects a plugin's factory made keep their library loaded themselves, so
// they may outlive the registry.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stormo/cpu_features.hpp"
#include "stormo/error.hpp"
#include "stormo/export.hpp"
#include "stormo/family_plugin.hpp"
#include "stormo/kernels_plugin.hpp"

namespace stormo {

// A library that passed every check and whose factory made its object.
struct STORMO_API LoadedPlugin {
    std::string name;
    PluginKind kind = PluginKind::model;
    std::string version;
    std::string summary;
    std::string path;                       // absolute path of the library
    std::vector<std::string> accepts;       // model plugins: architectures / model_type values
    std::vector<CpuFeature> cpu_features;   // kernels plugins: what the code was compiled for

    // Set by kind; each holds the library loaded while it lives. A kernels plugin that cannot
    // run on this CPU is listed but never created (its factory may rightly refuse): `kernels` is
    // then null and `unusable_reason` says why.
    std::shared_ptr<const FamilyPlugin> family;
    std::shared_ptr<const KernelsPlugin> kernels;
    std::string unusable_reason;

    // The plugin's stormo_plugin_score; 0 when it throws (an unusable plugin, not a crash).
    int score(const ScoreQuery& query) const;

    // Set by the loader.
    stormo_plugin_score_fn score_fn = nullptr;
    std::shared_ptr<const void> library;
};

// A library found by the glob and refused, with the one-line reason.
struct RejectedPlugin {
    std::string path;
    std::string file_kind;  // "model" / "kernels", from the file name
    std::string file_name;  // the <name> part of the file name
    std::string reason;
};

// One directory to search, and why it is searched (for messages).
struct PluginDir {
    std::string path;
    std::string origin;     // "built-in", "STORMO_PLUGIN_PATH", "--plugins-dir", "plugins_dirs in X"
    bool required = false;  // a directory the user named must exist
};

struct PluginSearch {
    bool builtin = true;          // <program dir>/../lib/stormo/plugins
    bool environment = true;      // each directory of STORMO_PLUGIN_PATH (colon separated)
    std::vector<PluginDir> extra; // then these, in order (YAML plugins_dirs, then --plugins-dir)
    // The CPU kernels plugins are created for (default: this machine's, detect_cpu_features()).
    std::optional<CpuFeatureSet> cpu;
};

// The directories a search visits, in order (the built-in one first).
STORMO_API std::vector<PluginDir> plugin_search_dirs(const PluginSearch& search);
// <directory of the running program>/../lib/stormo/plugins
STORMO_API std::string builtin_plugin_dir();

class STORMO_API PluginRegistry {
public:
    // Loads every libstormo-model-*.so and libstormo-kernels-*.so of the search directories.
    // Refused libraries are recorded, never fatal; only a required directory that does not exist
    // is an error.
    static Expected<PluginRegistry> discover(const PluginSearch& search);

    const std::vector<LoadedPlugin>& plugins() const { return plugins_; }
    const std::vector<RejectedPlugin>& rejected() const { return rejected_; }
    const std::vector<PluginDir>& searched() const { return searched_; }

    const LoadedPlugin* find(std::string_view name) const;
    std::vector<const LoadedPlugin*> of_kind(PluginKind kind) const;
    // The families of the model plugins, in load order (what opens a GGUF model asks).
    std::vector<const Family*> families() const;

    // Loads one library and records it (accepted or rejected); exposed for tests.
    void add_library(const std::string& path, CpuFeatureSet cpu);

private:
    std::vector<LoadedPlugin> plugins_;
    std::vector<RejectedPlugin> rejected_;
    std::vector<PluginDir> searched_;
};

}  // namespace stormo
