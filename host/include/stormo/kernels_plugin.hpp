#pragma once
// What a kernels plugin includes: the kernel table and the plugin ABI.
#include "stormo/kernels.hpp"
#include "stormo/plugin_abi.hpp"

namespace stormo {

class STORMO_API KernelsPlugin : public PluginObject {
public:
    ~KernelsPlugin() override;
    // Replaces the entries of `table` (pre-filled with the reference) that this ISA implements.
    virtual void install(KernelTable& table) const = 0;
};

}  // namespace stormo
