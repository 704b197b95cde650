#pragma once
// What a model-family plugin includes: the family interface and the plugin ABI.
#include "stormo/family.hpp"
#include "stormo/plugin_abi.hpp"

namespace stormo {

class STORMO_API FamilyPlugin : public PluginObject, public Family {
public:
    ~FamilyPlugin() override;
};

}  // namespace stormo
