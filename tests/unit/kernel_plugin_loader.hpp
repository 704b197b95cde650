#pragma once
// Loads a kernels plugin from the build tree with Boost.DLL, as the host's discovery does, for
// the tests that install its kernels over a copy of the reference table.
#include <gtest/gtest.h>

#include <boost/dll/shared_library.hpp>

#include <memory>
#include <string>

#include "stormo/kernels_plugin.hpp"
#include "stormo/plugin_abi.hpp"

namespace stormo::testing {

// One loaded kernels plugin; the object dies before the library that holds its code.
struct LoadedKernels {
    boost::dll::shared_library lib;
    const PluginDescription* description = nullptr;
    stormo_plugin_score_fn score = nullptr;
    std::unique_ptr<PluginObject> object;
    Error create_error;

    const KernelsPlugin* plugin() const { return dynamic_cast<const KernelsPlugin*>(object.get()); }
};

inline std::unique_ptr<LoadedKernels> load_kernels(const std::string& isa) {
    auto k = std::make_unique<LoadedKernels>();
    const std::string path = std::string(STORMO_BUILD_PLUGIN_DIR) + "/libstormo-kernels-" + isa + ".so";
    k->lib.load(path);
    const std::string abi = k->lib.get<const char*()>("stormo_plugin_abi")();
    EXPECT_EQ(abi, kStormoAbi) << path;
    k->description = k->lib.get<const PluginDescription*()>("stormo_plugin_describe")();
    k->score = k->lib.get<int(const ScoreQuery*)>("stormo_plugin_score");
    k->object.reset(k->lib.get<PluginObject*(Error*)>("stormo_plugin_create")(&k->create_error));
    return k;
}

}  // namespace stormo::testing
